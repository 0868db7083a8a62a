// Continuous refinement of a search's integer peak: the metric evaluated at
// continuous shifts, without the grid bias of MI on linearly interpolated
// images (Pluim, Maintz & Viergever 2000): the frames are compared as
// Gaussian-smoothed intensities (sigma 1 px, the same for both, so no bias),
// the moving frame interpolated with cubic B-splines, and the metric taken
// from a joint histogram with cubic B-spline Parzen windows (Mattes et al.
// 2003), so it is smooth in the shift. MI, NMI and CR come from that
// histogram; NCC from the moments of the smoothed values themselves
// (pair_moments.hpp), which the histogram's binning would blur.
//
// Histograms and moments are accumulated in fixed point (a pixel adds 16
// integer weights, or 6 integer moments), so the sums do not depend on the
// order of additions and the CPU and CUDA twins produce identical
// statistics, hence identical scores and identical refined shifts.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "../../src/core/choices.hpp"
#include "../../src/core/image.hpp"
#include "../backend.hpp"
#include "../mi_search/mi_search.hpp"
#include "../preprocess/preprocess.hpp"

namespace stackalign {

constexpr int kRefineBins = 32;        // Parzen histogram bins per axis (2 of them padding either side)
constexpr float kRefineSigmaClean = 0.65f;  // what refine_sigma = "auto" gives frames with little noise
constexpr double kWeightScale = 16777216.0;  // 2^24: fixed-point unit of one Parzen weight

// What frames are compared on when refining: their intensities (MI does not
// change under any one-to-one remapping of them: gain, gamma, inversion), or
// the search's edges (mean filter + Sobel), which change less than the
// projected intensities of a tilt series do from view to view. Measured on
// the `make compare` cases (docs/benchmarks.md), before intensities had
// their LevelMap: intensities 0.019 / 0.009 / 0.038 px RMS on gain-gamma /
// folded / noisy stacks where edges gave 0.035 / 0.050 / 0.090; edges
// 0.047 px on the jittered HAADF tilt series where intensities gave 0.077.
// The stack plan picks edges for tilt series.
enum class RefineOn { intensity, edges };
template <>
struct EnumNames<RefineOn> {
    static constexpr const char* names[] = {"intensity", "edges"};
};

// A frame's values -> their place in its distribution (0..1): the
// cumulative histogram at kLevelKnots + 1 evenly spaced values, linear in
// between, so monotone and continuous.
//
// Why: MI does not change under a one-to-one remapping of the values, but
// its estimate from 32 bins does: a gamma or a gain crowds one frame's
// values into a few bins. Binning each frame's values by its own
// distribution (equal-area bins) undoes that. The map is applied to the
// moving frame's values after interpolation, never to the image before it:
// interpolating an equalised image (steep where the frame is flat) biased
// the fractional-shift sweep to 0.031 px mean |error| in x, against 0.003.
// Measured on `make compare` (docs/benchmarks.md).
constexpr int kLevelKnots = 256;
struct LevelMap {
    bool on = false;  // off: values are binned linearly (edges)
    float lo = 0, scale = 0;  // value -> knot position
    float knots[kLevelKnots + 1] = {};
};
// The highest knot position a value takes (the last segment's start stays
// below kLevelKnots): map_level and the CPU's four-lane map_level_row.
constexpr float kLevelTop = float(kLevelKnots) - 1e-3f;
// `knots`: m.knots, or a copy of them (the GPU twin's in shared memory).
STACKALIGN_HD inline float map_level(float v, const LevelMap& m, const float* knots) {
    float t = (v - m.lo) * m.scale;
    const float top = kLevelTop;
    t = t < 0.0f ? 0.0f : t > top ? top : t;
    const int i = int(t);
    return knots[i] + (t - float(i)) * (knots[i + 1] - knots[i]);
}

// What a pair is refined on, per frame: when it is the reference, its
// smoothed features with `levels` applied; when moving, the cubic B-spline
// coefficients of the smoothed features, and `levels` to apply to each
// interpolated value.
struct RefineFeatures {
    ImageF smooth;
    ImageF coefficients;
    LevelMap levels;
};
// normalise (min..max -> 0..255) [-> mean filter -> Sobel, `search`'s] ->
// Gaussian (`sigma`, kRefineSigmaMin..kRefineSigma) -> B-spline prefilter;
// 2D or 3D. Intensities get a LevelMap; edges are binned linearly
// (equalised edges lost: HAADF tilt series 0.05 -> 0.14 px).
RefineFeatures refine_features(const RawFrame& frame, RefineOn on, const PreprocessParams& search,
                               float sigma = kRefineSigma);
// The same from where they start: the normalised frame (intensity) or its
// edges (edges), as the search's own preprocessing made them on the host.
// Prefilter::later leaves `coefficients` a copy of the smoothed features
// before their levels, for prefilter_coefficients once the frame is refined
// as the moving one: a stretched series' pairs refine half their loads only
// as the reference, which reads `smooth` alone (NCC reads the reference's
// coefficients too: its searcher prefilters them then).
enum class Prefilter { now, later };
RefineFeatures refine_features_from(ImageF start, RefineOn on, float sigma = kRefineSigma,
                                    Prefilter when = Prefilter::now);
// The B-spline prefilter of features made with Prefilter::later; the same
// coefficients as Prefilter::now.
void prefilter_coefficients(RefineFeatures& f);

struct ContinuousShift {
    double x = 0, y = 0, z = 0;
};

struct RefineParams {
    Metric metric = Metric::mi;        // ncc: pixel moments; the others: the Parzen histogram
    float ncc_sign = 1;                // ncc: -1 maximises -r (a contrast inverted between the frames)
    SearchWindow window;               // in the reference
    int bins = kRefineBins;
    // Value ranges mapped onto the bins, fixed for the pair (refine_params);
    // the moving frame's interpolated values go through its LevelMap first.
    float ref_lo = 0, ref_scale = 1, mov_lo = 0, mov_scale = 1;
    LevelMap mov_levels;
};
// The parameters for a window of `ref` searched in `mov` within `reach`
// pixels (per axis) of the window's place moved by `centre`.
RefineParams refine_params(const RefineFeatures& ref, const RefineFeatures& mov, const SearchWindow& window,
                           const IntShift& centre, const ShiftRange& reach, Metric metric);
// What those parameters are made of, for a backend that keeps the features
// elsewhere: the boxes [x0, x1) x [y0, y1) x [z0, z1) (clipped to the image
// by whoever reads them) whose value ranges set the bins, the reference's
// and the moving frame's (all it can sample)...
struct RefineBox {
    int x0, y0, z0, x1, y1, z1;
};
std::pair<RefineBox, RefineBox> refine_boxes(const SearchWindow& window, const IntShift& centre, const ShiftRange& reach);
// ...and the parameters from those ranges (lo, hi) and the moving frame's level map.
RefineParams refine_params_from(std::pair<float, float> ref_range, std::pair<float, float> mov_range,
                                const LevelMap& mov_levels, const SearchWindow& window, Metric metric);

// refine_metric = "auto" (rigid and similarity motion), per pair: where the
// pair's smoothed values at the search's answer are linearly related, |r| at
// least kAutoNccCorrelation, NCC with the relation's sign (a contrast
// inverted between the frames is as linear as a gain, and NCC's estimate of
// the angle is 2-3x MI's precision on such frames: docs/benchmarks.md,
// Rotation); otherwise `p` as it is (the search's metric, which follows any
// one-to-one change of contrast).
constexpr double kAutoNccCorrelation = 0.9;
RefineParams auto_refine_params(RefineParams p, double r);

// Cubic B-spline weights of the four samples around a point whose
// fractional offset from the second one is u, in [0, 1). F is float, or a
// GCC vector of floats (the CPU twin's rows, four values at a time: the
// same operations lane by lane).
template <typename F>
STACKALIGN_HD inline void bspline_weights(F u, F w[4]) {
    const F v = 1.0f - u, u2 = u * u, u3 = u2 * u;
    w[0] = v * v * v / 6.0f;
    w[1] = (3.0f * u3 - 6.0f * u2 + 4.0f) / 6.0f;
    w[2] = (-3.0f * u3 + 3.0f * u2 + 3.0f * u + 1.0f) / 6.0f;
    w[3] = u3 / 6.0f;
}

// The highest place on a Parzen axis of `bins` bins (2 of padding above):
// parzen_place and the CPU's four-lane place_row.
STACKALIGN_HD inline float parzen_top(int bins) { return float(bins) - 2.0f - 1e-3f; }
// A value's place on the Parzen axis: its first bin and the four weights.
STACKALIGN_HD inline int parzen_place(float value, float lo, float scale, int bins, float w[4]) {
    float t = (value - lo) * scale + 2.0f;  // 2 bins of padding below
    const float top = parzen_top(bins);
    t = t < 2.0f ? 2.0f : t;  // two plain selects (the same values): the CPU twin's loop over a row vectorises
    t = t > top ? top : t;
    const int i = int(t);
    bspline_weights(t - float(i), w);
    return i - 1;
}

// The score of `metric` from a fixed-point Parzen histogram (bins x bins,
// row = reference bin): MI and NMI from its entropies, NCC and CR from its
// moments with bin indices as values.
double parzen_score(const std::uint64_t* histogram, int bins, Metric metric);

// What one candidate's statistics are: NCC's kMomentCount fixed-point pixel
// moments (pair_moments.hpp), or the Parzen histogram (bins x bins) of
// every other metric; and p.metric's score of each candidate in a batch of
// them (statistics_size(p) words each, candidate-major).
std::size_t statistics_size(const RefineParams& p);
std::vector<double> refine_scores(const std::vector<std::uint64_t>& statistics, const RefineParams& p);

// How the GPU adds a batch's Parzen histograms (refine_cuda.cu), the same
// integer words either way: `pixels`, each pixel's 16 weights into the
// block's shared histogram; `runs`, a thread's 8 neighbouring pixels'
// weights summed in registers while they share their 4 x 4 cells, one
// atomic a cell when the cells move. Which is sooner depends on the data
// (`bash bench/device.sh profile`, H100: runs 106 against 163 us a batch on the
// tilt series of `bench stages`, 91 against 76 on the sample time-lapse,
// 82 against 53 on the drift stack), so `automatic` times both on the first
// batch of each window shape in the process and keeps the sooner.
enum class ParzenAdd { automatic, pixels, runs };
template <>
struct EnumNames<ParzenAdd> {
    static constexpr const char* names[] = {"auto", "pixels", "runs of 8"};
};

// Each shift's fixed-point statistics, statistics_size(p) per shift, shift-major.
std::vector<std::uint64_t> refine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                             const RefineParams& p, const std::vector<ContinuousShift>& shifts,
                                             const Device& device);

// Scores a batch of shifts (one call per level of the search below).
using ShiftScorer = std::function<std::vector<double>(const std::vector<ContinuousShift>&)>;
// Coarse to fine from `start` (the integer peak): per level, a stencil of
// 3 points per axis (`dims` axes) at the level's spacing about the estimate
// so far, and the estimate moved to the maximum of the quadric fitted to
// its scores (at most `reach` spacings per axis), or to the stencil's best
// point where they form no maximum. Deterministic; one batch of scores per
// level; the answer stays within 0.88 px of `start`.
//
// Why a fitted quadric: it finds the peak between the points, so a level
// needs 3 points per axis where grids of 5 with a parabola on the last
// needed 5 (75 scores in 2D, 375 in 3D, against 27 and 81); the scores
// are most of the refinement's time on both backends. Why 0.75 px first: a
// stencil wider than the small-scale roughness of MI on a small noisy
// window (the jittered HAADF compare case, 10 seeds: mean RMS 0.158 px
// with a first spacing of 0.25, 0.063 with 0.5, 0.055 with 0.75; the
// 5 x 5 grids 0.071), while the noise-free fractional sweep does not
// change (docs/benchmarks.md).
struct RefineLevel {
    double spacing;  // px
    double reach;    // spacings
};
constexpr RefineLevel kRefineLevels[] = {{0.75, 0.75}, {0.125, 2.0}, {0.03125, 2.0}};
ContinuousShift refine_continuous(const ShiftScorer& score, const ContinuousShift& start, int dims);
// How many shifts refine_continuous scores (27 in 2D, 81 in 3D).
int refine_evaluations(int dims);

// The refined shift of a pair whose integer search peaked at `start`:
// refine_continuous over the scores of the statistics `statistics` makes.
using StatisticsMaker = std::function<std::vector<std::uint64_t>(const std::vector<ContinuousShift>&)>;
ContinuousShift refine_pair(const RefineParams& p, const StatisticsMaker& statistics, const ContinuousShift& start, int dims);

namespace cpu {
std::vector<std::uint64_t> refine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                             const RefineParams& p, const std::vector<ContinuousShift>& shifts);
}
namespace cuda {
// refine_features made on the GPU (as the CUDA searcher makes them), brought back: the twin tests compare them.
RefineFeatures refine_features(const RawFrame& frame, RefineOn on, const PreprocessParams& search,
                               float sigma = kRefineSigma, int gpu = 0);
// `add`: how the Parzen histograms are added (ParzenAdd; the same words either way).
std::vector<std::uint64_t> refine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                             const RefineParams& p, const std::vector<ContinuousShift>& shifts,
                                             int gpu = 0, ParzenAdd add = ParzenAdd::automatic);
}

}  // namespace stackalign
