// The refinement's features and parameters, made on the host for both
// backends: the smoothing, the cubic B-spline coefficients and the level
// map of a frame (refine_features), and the value ranges of a pair's boxes
// (refine_params). The GPU makes the same features from its own images
// (refine_features_cuda.cu) with the arithmetic of feature_filters.hpp.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "../preprocess/preprocess.hpp"
#include "feature_filters.hpp"
#include "refine.hpp"
namespace stackalign {
namespace {

// Calls f(row, scratch) for every row of the image (all slices), in
// parallel; `scratch` is the calling thread's own buffer of `scratch_size`.
template <typename T, typename F>
void for_each_row(const ImageF& im, std::size_t scratch_size, F&& f) {
    const long long rows = (long long)(im.height) * im.depth;
#pragma omp parallel if (parallel_filter(im.pixels.size()))
    {
        std::vector<T> scratch(scratch_size);
#pragma omp for schedule(static)
        for (long long r = 0; r < rows; ++r) f(r * im.width, scratch.data());
    }
}

// Calls f(first, stride, length, columns) for every block of up to 64
// neighbouring lines along `axis` 1 or 2, in parallel: sample i of line j of
// a block is at first + i * stride + j. Lines across memory are filtered a
// block at a time, so the inner loops run along x in memory order; each
// sample still sees the same operations in the same order as along a row,
// so the results do not depend on the axis's layout.
template <typename F>
void for_each_block(const ImageF& im, int axis, F&& f) {
    const long long stride = axis == 1 ? im.width : (long long)(im.width) * im.height;
    const int length = axis == 1 ? im.height : im.depth;
    const int across = axis == 1 ? im.depth : im.height;  // independent slabs of lines
    const int blocks = (im.width + 63) / 64;
#pragma omp parallel for collapse(2) schedule(static) if (parallel_filter(im.pixels.size()))
    for (int s = 0; s < across; ++s)
        for (int b = 0; b < blocks; ++b) {
            const long long slab = axis == 1 ? (long long)(s) * im.width * im.height : (long long)(s) * im.width;
            f(slab + b * 64, stride, length, std::min(64, im.width - b * 64));
        }
}

// Separable Gaussian along one axis, edges repeated: gaussian_sample's sums
// (taps from -radius up, from 0), many samples at once. Along rows, each
// row is first padded with its repeated edges (a sample at a time, with
// its taps' clamps, was a seventh of a small frame's load). Each sample's
// sum is kept in a register through its taps, so a pass over the line
// does all of them on vector units: a pass per tap, adding into memory,
// was 40 % of a small frame's features (bench/probes/load_steps.cpp).
template <typename Tap>
inline float gaussian_sum(const float* k, Tap&& at) {
    float v = 0.0f;
    for (int t = 0; t <= 2 * kGaussianRadius; ++t) v += k[t] * at(t);
    return v;
}

// `out`: an image of im's shape, every pixel overwritten; the two are
// swapped at the end, so one spare image serves every axis.
void gaussian_lines(ImageF& im, ImageF& out, int axis, float sigma) {
    const int radius = kGaussianRadius;
    float k[2 * kGaussianRadius + 1];
    gaussian_taps(k, sigma);
    if (axis == 0) {
        const int w = im.width;
        for_each_row<float>(im, std::size_t(w) + 2 * radius, [&](long long first, float* padded) {
            const float* in = im.pixels.data() + first;
            pad_row(in, w, radius, padded);
            float* o = out.pixels.data() + first;
            for (int x = 0; x < w; ++x) o[x] = gaussian_sum(k, [&](int t) { return padded[x + t]; });
        });
    } else {
        for_each_block(im, axis, [&](long long first, long long stride, int len, int columns) {
            const float* line[2 * kGaussianRadius + 1];
            for (int i = 0; i < len; ++i) {
                for (int t = -radius; t <= radius; ++t)
                    line[t + radius] = im.pixels.data() + first + std::clamp(i + t, 0, len - 1) * stride;
                float* o = out.pixels.data() + first + i * stride;
                for (int j = 0; j < columns; ++j) o[j] = gaussian_sum(k, [&](int t) { return line[t][j]; });
            }
        });
    }
    std::swap(im.pixels, out.pixels);
}

// prefilter_line's recursion over `columns` lines side by side: c[i *
// Stride + j] holds 6 x sample i of line j on entry, its coefficient on
// return (in double; the caller rounds to float, as prefilter_line does).
// Columns, where not 0, fixes the count at compile time.
template <int Stride, int Columns = 0>
void prefilter_block(double* c, int len, int lines, double z, int horizon_max) {
    const int columns = Columns ? Columns : lines;
    double sum[Stride];
    for (int j = 0; j < columns; ++j) sum[j] = c[j];
    double zk = z;
    for (int i = 1; i < std::min(len, horizon_max); ++i, zk *= z)
        for (int j = 0; j < columns; ++j) sum[j] += zk * c[i * Stride + j];
    for (int j = 0; j < columns; ++j) c[j] = sum[j];
    for (int i = 1; i < len; ++i)
        for (int j = 0; j < columns; ++j) c[i * Stride + j] += z * c[(i - 1) * Stride + j];
    for (int j = 0; j < columns; ++j)
        c[(len - 1) * Stride + j] = (z / (z * z - 1.0)) * (c[(len - 1) * Stride + j] + z * c[(len - 2) * Stride + j]);
    for (int i = len - 2; i >= 0; --i)
        for (int j = 0; j < columns; ++j) c[i * Stride + j] = z * (c[(i + 1) * Stride + j] - c[i * Stride + j]);
}

// Cubic B-spline interpolation coefficients along one axis (Unser's
// recursive filter, mirror boundaries), prefilter_line's arithmetic a block
// of lines side by side. Rows are taken 16 at a time through a transposed
// copy: one row's recursion alone is a chain of dependent steps (a seventh
// of a small frame's load). The copy is 16 lanes wide (a 144-px row's
// block is 18 KB, in the first-level cache; 64 lanes made it 73 KB), and
// a block always runs 16 lanes (those past the last row are zeros, never
// copied back), so the compiler knows the count.
void prefilter_lines(ImageF& im, int axis) {
    const double z = spline_pole();
    const int horizon_max = spline_horizon();
    if (axis == 0) {
        constexpr int kRowsAtOnce = 16;
        const int w = im.width;
        if (w < 2) return;
        const long long rows = (long long)(im.height) * im.depth, blocks = (rows + kRowsAtOnce - 1) / kRowsAtOnce;
#pragma omp parallel if (parallel_filter(im.pixels.size()))
        {
            std::vector<double> c(std::size_t(w) * kRowsAtOnce, 0.0);
#pragma omp for schedule(static)
            for (long long b = 0; b < blocks; ++b) {
                const int lines = int(std::min<long long>(kRowsAtOnce, rows - b * kRowsAtOnce));
                float* first = im.pixels.data() + b * kRowsAtOnce * w;
                for (int i = 0; i < w; ++i)
                    for (int j = 0; j < kRowsAtOnce; ++j) c[i * kRowsAtOnce + j] = j < lines ? 6.0 * first[j * w + i] : 0.0;
                prefilter_block<kRowsAtOnce, kRowsAtOnce>(c.data(), w, lines, z, horizon_max);
                for (int i = 0; i < w; ++i)
                    for (int j = 0; j < lines; ++j) first[j * w + i] = float(c[i * kRowsAtOnce + j]);
            }
        }
        return;
    }
    for_each_block(im, axis, [&](long long first, long long stride, int len, int columns) {
        if (len < 2) return;
        std::vector<double> c(std::size_t(len) * 64);
        for (int i = 0; i < len; ++i)
            for (int j = 0; j < columns; ++j) c[i * 64 + j] = 6.0 * im.pixels[first + i * stride + j];
        prefilter_block<64>(c.data(), len, columns, z, horizon_max);
        for (int i = 0; i < len; ++i)
            for (int j = 0; j < columns; ++j) im.pixels[first + i * stride + j] = float(c[i * 64 + j]);
    });
}

std::pair<float, float> range_of(const ImageF& im, int x0, int y0, int z0, int x1, int y1, int z1) {
    float lo = INFINITY, hi = -INFINITY;
    for (int z = std::max(z0, 0); z < std::min(z1, im.depth); ++z)
        for (int y = std::max(y0, 0); y < std::min(y1, im.height); ++y)
            for (int x = std::max(x0, 0); x < std::min(x1, im.width); ++x) {
                lo = std::min(lo, im.at(x, y, z));
                hi = std::max(hi, im.at(x, y, z));
            }
    return {lo, hi};
}

// The range and the counts in parallel on large images (a volume's two
// passes on one thread were part of a landmark job's serial time): the
// lowest, the highest and integer counts are the same in any order.
LevelMap level_map(const ImageF& im) {
    float lo = INFINITY, hi = -INFINITY;
    const float* v = im.pixels.data();
    const long long n = (long long)(im.pixels.size());
    const bool threads = parallel_filter(std::size_t(n) / 4);
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi) if (threads)
    for (long long i = 0; i < n; ++i) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
    if (!(hi > lo)) return LevelMap{};  // a constant frame: linear binning (one bin)
    const float scale = level_scale(lo, hi);
    std::uint64_t count[kLevelKnots] = {};
#pragma omp parallel for schedule(static) reduction(+ : count[:kLevelKnots]) if (threads)
    for (long long i = 0; i < n; ++i) ++count[level_interval(v[i], lo, scale)];
    return level_map_from_counts(lo, hi, count, im.pixels.size());
}

}  // namespace

RefineFeatures refine_features(const RawFrame& frame, RefineOn on, const PreprocessParams& search, float sigma) {
    ImageF start = cpu::normalise(frame);
    if (on == RefineOn::edges) start = cpu::sobel_magnitude(cpu::mean_filter(start, search.mean_radius));
    return refine_features_from(std::move(start), on, sigma);
}

RefineFeatures refine_features_from(ImageF start, RefineOn on, float sigma, Prefilter when) {
    RefineFeatures f;
    f.smooth = std::move(start);
    const int axes = f.smooth.depth > 1 ? 3 : 2;
    // One spare image for the smoothing's passes, then the coefficients'
    // own: a fresh image a pass was four large allocations, each zeroed by
    // one thread (a 15-megavoxel volume's page faults).
    ImageF spare = ImageF::for_overwrite(f.smooth.width, f.smooth.height, f.smooth.depth);
    for (int axis = 0; axis < axes; ++axis) gaussian_lines(f.smooth, spare, axis, sigma);
    f.coefficients = std::move(spare);
    const float* from = f.smooth.pixels.data();
    float* to = f.coefficients.pixels.data();
    const long long n = (long long)(f.smooth.pixels.size());
#pragma omp parallel for schedule(static) if (parallel_filter(std::size_t(n)))
    for (long long i = 0; i < n; ++i) to[i] = from[i];
    if (when == Prefilter::now) prefilter_coefficients(f);
    if (on == RefineOn::intensity) {
        f.levels = level_map(f.smooth);
        float* px = f.smooth.pixels.data();
#pragma omp parallel for schedule(static) if (parallel_filter(f.smooth.pixels.size()))
        for (long long i = 0; i < (long long)(f.smooth.pixels.size()); ++i) px[i] = map_level(px[i], f.levels, f.levels.knots);
    }
    return f;
}

void prefilter_coefficients(RefineFeatures& f) {
    for (int axis = 0; axis < (f.coefficients.depth > 1 ? 3 : 2); ++axis) prefilter_lines(f.coefficients, axis);
}

std::pair<RefineBox, RefineBox> refine_boxes(const SearchWindow& w, const IntShift& c, const ShiftRange& reach) {
    const int mx = w.x + c.x, my = w.y + c.y, mz = w.z + c.z;
    return {RefineBox{w.x, w.y, w.z, w.x + w.width, w.y + w.height, w.z + w.depth},
            RefineBox{mx - reach.x - 2, my - reach.y - 2, mz - reach.z - 2, mx + w.width + reach.x + 2,
                      my + w.height + reach.y + 2, mz + w.depth + reach.z + 2}};
}

RefineParams refine_params(const RefineFeatures& ref, const RefineFeatures& mov, const SearchWindow& w,
                           const IntShift& c, const ShiftRange& reach, Metric metric) {
    const auto [rb, mb] = refine_boxes(w, c, reach);
    return refine_params_from(range_of(ref.smooth, rb.x0, rb.y0, rb.z0, rb.x1, rb.y1, rb.z1),
                              range_of(mov.smooth, mb.x0, mb.y0, mb.z0, mb.x1, mb.y1, mb.z1), mov.levels, w, metric);
}

RefineParams refine_params_from(std::pair<float, float> ref_range, std::pair<float, float> mov_range,
                                const LevelMap& mov_levels, const SearchWindow& w, Metric metric) {
    RefineParams p;
    p.metric = metric;
    p.window = w;
    const auto [rl, rh] = ref_range;
    const auto [ml, mh] = mov_range;
    p.mov_levels = mov_levels;
    const float span = float(p.bins - 4) - 2e-3f;
    p.ref_lo = rl;
    p.ref_scale = rh > rl ? span / (rh - rl) : 0.0f;
    p.mov_lo = ml;
    p.mov_scale = mh > ml ? span / (mh - ml) : 0.0f;
    return p;
}

RefineParams auto_refine_params(RefineParams p, double r) {
    if (std::abs(r) < kAutoNccCorrelation) return p;
    p.metric = Metric::ncc;
    p.ncc_sign = r < 0 ? -1.0f : 1.0f;
    return p;
}

}  // namespace stackalign
