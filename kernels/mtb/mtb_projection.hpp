// Exposure-invariant projection alignment (Guthier et al.): each frame
// becomes a median-threshold bitmap (Ward's MTB: brighter than the median =
// white, darker = black, pixels close to the median = ignored), and the
// bitmap is summarised by four projections, the white and black counts of
// each column and of each row. A shift in x is found by the normalised
// cross-correlation of the column projections alone, a shift in y by the
// row projections. A monotonic change of brightness (gain, gamma, exposure)
// keeps the median's rank, so the bitmaps and the shift survive it.
//
// The ignored band is measured in pixel ranks, not levels: the levels from
// the (50 - band)th to the (50 + band)th percentile. Ward's band of +-4
// levels is not invariant: a gamma of 2.2 squeezes the dark half of a frame
// into a few levels, and a band of 4 levels then hides most of the bitmap
// (the tests met this on a real frame).
//
// The window and shift range are the window search's: column counts are
// taken over the window's rows, for every column a shift can bring into the
// window (and rows likewise), so each candidate compares the reference
// window's projection with an equally long piece of the moving one.
//
// The GPU twin (mtb_projection_cuda.cu) makes the same integer projections;
// the search below is one host function for both.
#pragma once
#include <cstdint>
#include <vector>

#include "../mi_search/mi_search.hpp"

namespace stackalign {

struct MtbParams {
    int band = 4;            // percent of pixels either side of the median that are ignored
    SearchWindow window;     // 2D: x, y, width, height
    ShiftRange max_shift;    // x, y
};

// Brightness levels of the histogram the thresholds come from. Ward used
// 256 for 8-bit photographs; microscopy frames are often dark, their median
// a few percent of the range, where 256 levels left the band (and the
// median) a level or two wide, and a gamma of 2 broke the bitmaps on the
// benchmark's real frames. 1024 levels keep the GPU's eight private copies
// in 32 KB of shared memory.
constexpr int kBrightnessLevels = 1024;

// The median level and the levels bounding the ignored band: a pixel is
// white above `hi`, black below `lo`.
struct MtbThresholds {
    int median = 0, lo = 0, hi = kBrightnessLevels - 1;
};
STACKALIGN_HD inline MtbThresholds mtb_thresholds(const std::uint32_t* histogram, int band) {
    unsigned long long total = 0, below = 0;
    for (int i = 0; i < kBrightnessLevels; ++i) total += histogram[i];
    MtbThresholds t{-1, -1, kBrightnessLevels - 1};
    for (int i = 0; i < kBrightnessLevels; ++i) {
        below += histogram[i];
        if (t.lo < 0 && 100 * below >= total * (unsigned long long)(50 - band)) t.lo = i;
        if (t.median < 0 && 2 * below >= total) t.median = i;
        if (100 * below >= total * (unsigned long long)(50 + band)) {
            t.hi = i;
            break;
        }
    }
    if (t.lo < 0) t.lo = 0;
    if (t.median < 0) t.median = t.hi;
    return t;
}

struct MtbProjections {
    MtbThresholds levels;
    std::vector<std::int32_t> col_white, col_black;    // columns window.x - m.x .. window.x + width + m.x - 1
    std::vector<std::int32_t> row_white, row_black;    // rows window.y - m.y .. window.y + height + m.y - 1
};

// The brightness level of a normalised pixel (0..255 float, preprocess's
// normalise): the integer part of v * levels / 256 (a power of two: exact).
STACKALIGN_HD inline int brightness_level(float v) {
    const float scaled = v * float(kBrightnessLevels / 256);
    return scaled >= float(kBrightnessLevels - 1) ? kBrightnessLevels - 1 : scaled > 0.0f ? int(scaled) : 0;
}

// Pearson correlation of two equally long integer profiles; 0 if either is flat.
double profile_ncc(const std::int32_t* a, const std::int32_t* b, int n);

// Scores every candidate (sx, sy) as the mean of the x score (white and
// black column NCCs averaged) at sx and the y score at sy, and picks the
// winner as the window search does (peak_from_map), so refinement and the
// pair checks treat both methods alike.
std::vector<double> mtb_map(const MtbProjections& ref, const MtbProjections& mov, const MtbParams& p);
MiPeak mtb_search(const MtbProjections& ref, const MtbProjections& mov, const MtbParams& p);

// The one entry point: a frame's thresholds and projections on the device's backend.
MtbProjections mtb_projections(const RawFrame& frame, const MtbParams& p, const Device& device);

namespace cpu {
std::vector<std::uint32_t> brightness_histogram(const ImageF& normalised);  // kBrightnessLevels
MtbProjections mtb_projections(const RawFrame& frame, const MtbParams& p);
}  // namespace cpu

namespace cuda {
std::vector<std::uint32_t> brightness_histogram(const RawFrame& frame, int gpu = 0);  // of the normalised frame
MtbProjections mtb_projections(const RawFrame& frame, const MtbParams& p, int gpu = 0);
}  // namespace cuda

}  // namespace stackalign
