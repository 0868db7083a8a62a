// Mutual-information window search between two quantized frames or volumes:
// for every integer shift s with |s.x| <= max_shift.x (and y, z), MI between
// the reference window of `ref` and the same window moved by s in `mov`.
// A 2D search is the 3D one with depth 1 and max_shift.z = 0. The CPU twin is the
// reference; the CUDA twin (mi_search_cuda.cu) must produce the same integer
// histograms and the same winning shift.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../../src/image.hpp"

namespace stackalign {

struct SearchWindow {
    int x = 0, y = 0, z = 0;    // first corner in the reference frame/volume
    int width = 0, height = 0, depth = 1;
};

// Where a window of the search's size starts; a landmark run searches many.
struct WindowCorner {
    int x = 0, y = 0, z = 0;
};

struct ShiftRange {
    int x = 0, y = 0, z = 0;    // half-ranges: shifts -x..x, -y..y, -z..z
};

// What a candidate is scored by, from its joint histogram: mutual
// information H(A) + H(B) - H(A,B), or Studholme's normalised MI
// (H(A) + H(B)) / H(A,B), which does not grow with the overlap's entropy.
enum class Metric { mi, nmi };

struct MiSearchParams {
    int bins = 64;
    Metric metric = Metric::mi;
    SearchWindow window;
    ShiftRange max_shift;
    int side_x() const { return 2 * max_shift.x + 1; }
    int side_y() const { return 2 * max_shift.y + 1; }
    int side_z() const { return 2 * max_shift.z + 1; }
    // Candidate i is the shift (i % side_x - m.x, i / side_x % side_y - m.y, i / (side_x side_y) - m.z).
    int candidates() const { return side_x() * side_y() * side_z(); }
    std::int64_t window_pixels() const { return std::int64_t(window.width) * window.height * window.depth; }
};

// A 2D search of a size x size window at (x, y), shifts up to max_shift in x and y.
MiSearchParams square_search(int bins, int x, int y, int size_x, int size_y, int max_shift);

// Empty when the window moved by every shift in range stays inside a
// width x height x depth frame; otherwise says which side it leaves by.
std::string window_overflow(const MiSearchParams& p, int width, int height, int depth = 1);
// Throws InputError with that text.
void check_window_fits(const MiSearchParams& p, int width, int height, int depth = 1);

// The winner of one search and what the caller needs to refine and judge it.
struct MiPeak {
    int dx = 0, dy = 0, dz = 0; // best integer shift of `mov` relative to `ref`
    double mi = 0;            // MI at the best shift (nats)
    double around[3][3];      // MI at (dy-1..dy+1, dx-1..dx+1) in the plane dz; NaN outside the range
    double around_z[3];       // MI at dz-1, dz, dz+1 for (dx, dy); NaN outside the range
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
// The metric's score from the same histogram; NMI of a window with no
// entropy at all (every pair in one bin) is 1, as for independent images.
double score_from_histogram(const std::uint32_t* hist, int bins, const std::vector<double>& nlogn, Metric metric);
// Both twins finish the score the same way from the three sums.
inline double score_from_sums(double marginals, double joint, double n, Metric metric) {
    if (n <= 0) return metric == Metric::nmi ? 1.0 : 0.0;
    const double log_n = std::log(n);
    if (metric == Metric::mi) return log_n - (marginals - joint) / n;
    const double h_joint = log_n - joint / n, h_sum = 2 * log_n - marginals / n;
    return h_joint > 1e-12 ? h_sum / h_joint : 1.0;
}

// Picks the winner from a full MI map (candidate order as above). Ties
// (within 1e-9 relative) go to the smallest |sx|+|sy|+|sz|, then to the
// lowest candidate index (smallest sz, then sy, then sx), so CPU and GPU
// agree even when their last bits differ.
MiPeak peak_from_map(const std::vector<double>& map, const ShiftRange& max_shift);

namespace cpu {

// Joint histogram (bins*bins counts) for one candidate shift.
void joint_histogram(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy, int sz,
                     std::uint32_t* hist);

// MI for every candidate, in candidate order.
std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p);

MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p);

}  // namespace cpu
}  // namespace stackalign
