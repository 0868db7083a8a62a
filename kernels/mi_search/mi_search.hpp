// Mutual-information window search between two quantized frames: for every
// integer shift s in [-max_shift, max_shift]^2, MI between the reference
// window of `ref` and the same window moved by s in `mov`. The CPU twin is the
// reference; the CUDA twin (mi_search_cuda.cu) must produce the same integer
// histograms and the same winning shift.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "../../src/image.hpp"

namespace stackalign {

struct SearchWindow {
    int x = 0, y = 0;           // top-left in the reference frame
    int width = 0, height = 0;
};

struct MiSearchParams {
    int bins = 64;
    SearchWindow window;
    int max_shift = 0;
    int side() const { return 2 * max_shift + 1; }
    int candidates() const { return side() * side(); }
    std::int64_t window_pixels() const { return std::int64_t(window.width) * window.height; }
};

// Throws InputError unless the window moved by up to max_shift stays inside
// a width x height frame.
void check_window_fits(const MiSearchParams& p, int width, int height);

// The winner of one search and what the caller needs to refine and judge it.
struct MiPeak {
    int dx = 0, dy = 0;       // best integer shift of `mov` relative to `ref`
    double mi = 0;            // MI at the best shift (nats)
    double around[3][3];      // MI at (dy-1..dy+1, dx-1..dx+1); NaN outside the search square
    double mean = 0;          // mean and standard deviation of MI over all candidates
    double stddev = 0;
    double sharpness() const { return stddev > 0 ? (mi - mean) / stddev : 0.0; }
};

// c*log(c) for every count a window can produce, so both twins sum the very
// same doubles and entropy costs a lookup, not a log.
std::vector<double> nlogn_table(std::int64_t max_count);

// MI = H(A) + H(B) - H(A,B) in nats, from a bins x bins joint histogram
// (row = reference bin, column = moving bin).
double mi_from_histogram(const std::uint32_t* hist, int bins, const std::vector<double>& nlogn);

// Picks the winner from a full MI map (index (sy+m)*side + (sx+m)). Ties
// (within 1e-9 relative) go to the smallest |sx|+|sy|, then smallest sy, then
// sx, so CPU and GPU agree even when their last bits differ.
MiPeak peak_from_map(const std::vector<double>& map, int max_shift);

namespace cpu {

// Joint histogram (bins*bins counts) for one candidate shift.
void joint_histogram(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy,
                     std::uint32_t* hist);

// MI for every candidate, index (sy+m)*side + (sx+m).
std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p);

MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p);

}  // namespace cpu
}  // namespace stackalign
