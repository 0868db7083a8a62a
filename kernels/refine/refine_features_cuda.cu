// The GPU twin of refine_features (refine_cpu.cpp): the same per-sample
// arithmetic from feature_filters.hpp, one thread per sample (Gaussian) or
// per line (B-spline prefilter), integer counts for the level map, so the
// features equal the CPU's bit for bit and the frame never goes back to
// the host to be smoothed.
#include <cuda_runtime.h>

#include <algorithm>

#include "../block_reduce.cuh"
#include "../preprocess/preprocess_cuda.cuh"
#include "feature_filters.hpp"
#include "refine_cuda.cuh"

namespace stackalign::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kLineThreads = 32;
int blocks_for(long long n) { return int((n + kThreads - 1) / kThreads); }

struct GaussianTaps {
    float k[2 * kGaussianRadius + 1];
};

// A line along `axis` through sample i: its first sample, step and length,
// and i's place on it.
struct LineOf {
    long long first, step;
    int length, at;
};
__device__ LineOf line_through(long long i, const RefineImage& g, int axis) {
    const long long plane = (long long)(g.width) * g.height;
    const int x = int(i % g.width), y = int(i / g.width % g.height), z = int(i / plane);
    if (axis == 0) return {i - x, 1, g.width, x};
    if (axis == 1) return {i - (long long)(y) * g.width, g.width, g.height, y};
    return {i - z * plane, plane, g.depth, z};
}
// Line l along `axis`, numbered as the CPU's for_each_line numbers them.
__device__ LineOf line_number(long long l, const RefineImage& g, int axis) {
    const long long plane = (long long)(g.width) * g.height;
    if (axis == 0) return {l * g.width, 1, g.width, 0};
    if (axis == 1) return {(l / g.width) * plane + l % g.width, g.width, g.height, 0};
    return {l, plane, g.depth, 0};
}

__global__ void gaussian_axis(const float* __restrict__ in, float* __restrict__ out, RefineImage g, int axis,
                              GaussianTaps taps) {
    const long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= (long long)(g.width) * g.height * g.depth) return;
    const LineOf l = line_through(i, g, axis);
    out[i] = gaussian_sample(in + l.first, l.step, l.length, l.at, taps.k);
}

__global__ void prefilter_axis(float* im, double* lines, RefineImage g, int axis, double z, int horizon) {
    const int length = axis == 0 ? g.width : axis == 1 ? g.height : g.depth;
    const long long l = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (l >= (long long)(g.width) * g.height * g.depth / length) return;
    const LineOf line = line_number(l, g, axis);
    prefilter_line(im + line.first, im + line.first, line.step, line.length, lines + line.first, line.step, z, horizon);
}

// The same per line through shared memory: a block's few lines are copied
// in by all its threads (many reads in flight, coalesced along rows), one
// thread per line runs prefilter_line (the same text, so the same values)
// there, and all copy them back. In global memory each step of a thread's
// recursion waited for its own reads (72 us an axis of a 512^2 frame on the
// H100, a fifth of the tilt series' GPU time). Lines are `stride` floats
// apart (odd, so the recursing threads at one sample hit distinct banks),
// the recursion's doubles interleaved (c[i * lines + line]): in shared
// memory beside the samples, or (kWide) in global memory, `wide` (n
// doubles, the block's lines' share at its first line's), which leaves
// shared memory to the samples alone. A 4096-px line staged with its
// doubles takes 48 KB, so 4 lines recursed side by side on an SM; with
// the doubles in global memory 13 do (12 KB a line of 3000 px: 16). A
// 4096^2 uint16 load on the H200 (`build/bench loads
// build/bench-stages/acquisition_cuda.toml`, calls apart): as read 5.3 ms
// against 5.5-5.6, stretched 5.3 against 5.8, four searchers at once 9.9
// against 11.1-11.4; the same words (tests/test_refine.cpp).
constexpr int kStagedThreads = 256;
constexpr int kStagedLines = 8;      // per block, doubles staged: 64 blocks for a 512^2 frame's rows
constexpr int kWideLines = 16;       // per block, doubles in global memory
constexpr int kStaticStaged = 1024;  // bytes of shared memory left for the kernel's static array
template <bool kWide>
__global__ void prefilter_axis_staged(float* im, double* wide, RefineImage g, int axis, double z, int horizon,
                                      int per_block) {
    extern __shared__ double staged[];
    __shared__ long long first_of[kWide ? kWideLines : kStagedLines];  // each line's first sample
    const int length = axis == 0 ? g.width : axis == 1 ? g.height : g.depth;
    const long long count = (long long)(g.width) * g.height * g.depth / length;
    const long long first = (long long)(blockIdx.x) * per_block;
    const int lines = int(count - first < per_block ? count - first : per_block), stride = length | 1;
    const long long step = line_number(0, g, axis).step;
    double* c = kWide ? wide + first * length : staged;
    float* v = kWide ? reinterpret_cast<float*>(staged) : reinterpret_cast<float*>(staged + (long long)(length) * per_block);
    const int t = int(threadIdx.x);
    if (t < lines) first_of[t] = line_number(first + t, g, axis).first;
    __syncthreads();
    // Rows a warp each, along the row; columns and slices (neighbouring
    // lines are neighbours in memory) a sample of every line at a time.
    auto each = [&](auto&& move) {
        if (axis == 0) {
            for (int l = t / 32; l < lines; l += kStagedThreads / 32)
                for (int i = t % 32; i < length; i += 32) move(l, i);
        } else {
            for (int k = t; k < lines * length; k += kStagedThreads) move(k % lines, k / lines);
        }
    };
    each([&](int l, int i) { v[l * stride + i] = im[first_of[l] + i * step]; });
    __syncthreads();
    if (t < lines) prefilter_line(v + t * stride, v + t * stride, 1, length, c + t, lines, z, horizon);
    __syncthreads();
    each([&](int l, int i) { im[first_of[l] + i * step] = v[l * stride + i]; });
}

// Lines of `length` a staged block takes within `bytes` of dynamic shared
// memory: as many as fit (at most kStagedLines, or kWideLines with the
// doubles in global memory), 0 where not even one does.
std::size_t staged_line_bytes(int length, bool wide) {
    return (wide ? 0 : std::size_t(length) * sizeof(double)) + std::size_t(length | 1) * sizeof(float);
}
int staged_lines_per_block(int length, int bytes, bool wide) {
    return int(std::min<long long>(wide ? kWideLines : kStagedLines,
                                   (long long)(bytes) / (long long)(staged_line_bytes(length, wide))));
}
std::size_t staged_bytes(int length, int per_block, bool wide) { return staged_line_bytes(length, wide) * per_block; }

// Min and max over a box of the image (clipped): the level map's over the
// whole image, the refinement's bin ranges over windows. Each (block, box)
// reduces a stripe to partial[box][block]; merge_ranges takes the min and
// max of those (exact in any order, so equal to the CPU's). One block per
// box left the GPU idle for 0.6-1.2 ms per range at 512-1024 px.
struct RangeBox {
    const float* v;
    RefineImage g;
    RefineBox b;
};
struct RangeBoxes {
    RangeBox box[2];
};
constexpr int kRangeBlocksMax = 128;

__global__ void box_range_partial(RangeBoxes boxes, float2* partial) {
    const RangeBox& r = boxes.box[blockIdx.y];
    const RefineImage& g = r.g;
    const int x0 = max(r.b.x0, 0), y0 = max(r.b.y0, 0), z0 = max(r.b.z0, 0);
    const int x1 = min(r.b.x1, g.width), y1 = min(r.b.y1, g.height), z1 = min(r.b.z1, g.depth);
    float lo = INFINITY, hi = -INFINITY;
    if (x1 > x0 && y1 > y0 && z1 > z0) {
        const long long w = x1 - x0, rows = (long long)(y1 - y0) * (z1 - z0), n = w * rows;
        for (long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
             i += (long long)(gridDim.x) * blockDim.x) {
            const long long row = i / w;
            const int x = x0 + int(i % w), y = y0 + int(row % (y1 - y0)), z = z0 + int(row / (y1 - y0));
            const float s = r.v[((long long)(z) * g.height + y) * g.width + x];
            lo = fminf(lo, s), hi = fmaxf(hi, s);
        }
    }
    const float2 range = block_reduce<kThreads>(make_float2(lo, hi), MergeRange{});
    if (threadIdx.x == 0) partial[blockIdx.y * gridDim.x + blockIdx.x] = range;
}

// Block b: the min and max of partial[b][0 .. count).
__global__ void merge_ranges(const float2* partial, int count, float2* out) {
    float lo = INFINITY, hi = -INFINITY;
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        const float2 p = partial[blockIdx.x * count + i];
        lo = fminf(lo, p.x), hi = fmaxf(hi, p.y);
    }
    const float2 range = block_reduce<kThreads>(make_float2(lo, hi), MergeRange{});
    if (threadIdx.x == 0) out[blockIdx.x] = range;
}

__global__ void level_counts(const float* __restrict__ v, long long n, float lo, float scale,
                             unsigned long long* __restrict__ counts) {
    __shared__ unsigned int local[kLevelKnots];
    for (int k = threadIdx.x; k < kLevelKnots; k += blockDim.x) local[k] = 0;
    __syncthreads();
    for (long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += (long long)(gridDim.x) * blockDim.x)
        atomicAdd(&local[level_interval(v[i], lo, scale)], 1u);
    __syncthreads();
    for (int k = threadIdx.x; k < kLevelKnots; k += blockDim.x)
        if (local[k]) atomicAdd(&counts[k], (unsigned long long)(local[k]));
}

__global__ void apply_levels(float* v, long long n, LevelMap m) {
    const long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) v[i] = map_level(v[i], m, m.knots);
}

}  // namespace

// Allowed once per maker, on the device it is used on, as DeviceMiSearch
// allows its kernels when it is made.
int DeviceFeatureMaker::staged_allowance() {
    if (staged_bytes_ >= 0) return staged_bytes_;
    int gpu = 0, optin = 0;
    CUDA_CHECK(cudaGetDevice(&gpu));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, gpu));
    const int dynamic = std::max(0, optin - kStaticStaged);
    CUDA_CHECK(cudaFuncSetAttribute(prefilter_axis_staged<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic));
    CUDA_CHECK(cudaFuncSetAttribute(prefilter_axis_staged<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic));
    staged_bytes_ = dynamic;
    return dynamic;
}

void DeviceFeatureMaker::make(const float* source, const RefineImage& g, RefineOn on, float sigma,
                              DeviceFeatures& out, cudaStream_t s, Prefilter when) {
    const long long n = (long long)(g.width) * g.height * g.depth;
    out.smooth.reserve(n);
    out.coefficients.reserve(n);
    out.geometry = g;
    out.levels = LevelMap{};
    GaussianTaps taps;
    gaussian_taps(taps.k, sigma);
    // Axis by axis as the CPU: source -> coefficients (x) -> smooth (y) [-> coefficients (z) -> smooth].
    const int axes = g.depth > 1 ? 3 : 2;
    const float* from = source;
    for (int axis = 0; axis < axes; ++axis) {
        float* to = (axes - axis) % 2 ? out.smooth.get() : out.coefficients.get();
        gaussian_axis<<<blocks_for(n), kThreads, 0, s>>>(from, to, g, axis, taps);
        CUDA_CHECK_LAUNCH("gaussian_axis");
        from = to;
    }
    CUDA_CHECK(cudaMemcpyAsync(out.coefficients.get(), out.smooth.get(), n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    if (when == Prefilter::now) prefilter(out, s);
    if (on != RefineOn::intensity) return;
    // The level map: range and counts here, knots on the host (a few hundred numbers).
    const auto [lo, hi] = range(out, RefineBox{0, 0, 0, g.width, g.height, g.depth}, s);
    if (!(hi > lo)) return;  // a constant frame: linear binning, as the CPU
    counts_.reserve(kLevelKnots);
    CUDA_CHECK(cudaMemsetAsync(counts_.get(), 0, kLevelKnots * sizeof(unsigned long long), s));
    level_counts<<<std::min(blocks_for(n), 256), kThreads, 0, s>>>(out.smooth.get(), n, lo, level_scale(lo, hi),
                                                                   counts_.get());
    CUDA_CHECK_LAUNCH("level_counts");
    std::uint64_t counts[kLevelKnots];
    CUDA_CHECK(cudaMemcpyAsync(counts, counts_.get(), sizeof counts, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    out.levels = level_map_from_counts(lo, hi, counts, std::uint64_t(n));
    apply_levels<<<blocks_for(n), kThreads, 0, s>>>(out.smooth.get(), n, out.levels);
    CUDA_CHECK_LAUNCH("apply_levels");
}

void DeviceFeatureMaker::prefilter(DeviceFeatures& f, cudaStream_t s) {
    const RefineImage& g = f.geometry;
    const long long n = (long long)(g.width) * g.height * g.depth;
    const int axes = g.depth > 1 ? 3 : 2;
    for (int axis = 0; axis < axes; ++axis) {
        const int length = axis == 0 ? g.width : axis == 1 ? g.height : g.depth;
        const long long count = n / length;
        // Doubles staged where kStagedLines fit, else whichever way recurses more lines a block.
        const int staged = staged_lines_per_block(length, staged_allowance(), false),
                  wide = staged_lines_per_block(length, staged_allowance(), true);
        if (staged >= kStagedLines || (staged > 0 && staged >= wide)) {
            prefilter_axis_staged<false><<<int((count + staged - 1) / staged), kStagedThreads,
                                           staged_bytes(length, staged, false), s>>>(
                f.coefficients.get(), nullptr, g, axis, spline_pole(), spline_horizon(), staged);
            CUDA_CHECK_LAUNCH("prefilter_axis_staged");
            continue;
        }
        lines_.reserve(n);
        if (wide > 0) {
            prefilter_axis_staged<true><<<int((count + wide - 1) / wide), kStagedThreads, staged_bytes(length, wide, true),
                                          s>>>(f.coefficients.get(), lines_.get(), g, axis, spline_pole(),
                                               spline_horizon(), wide);
            CUDA_CHECK_LAUNCH("prefilter_axis_staged (wide)");
            continue;
        }
        // Lines too long to stage: one thread per line, a warp per block (a
        // frame has only hundreds of lines, and latency-bound threads go
        // faster spread over many SMs).
        prefilter_axis<<<int((count + kLineThreads - 1) / kLineThreads), kLineThreads, 0, s>>>(
            f.coefficients.get(), lines_.get(), g, axis, spline_pole(), spline_horizon());
        CUDA_CHECK_LAUNCH("prefilter_axis");
    }
}

namespace {
long long box_pixels(const RefineBox& x) {
    return std::max(0LL, (long long)(x.x1 - x.x0)) * std::max(0, x.y1 - x.y0) * std::max(0, x.z1 - x.z0);
}
// The first `count` boxes' (min, max) into host[0 .. count).
void box_ranges(const RangeBoxes& boxes, int count, DeviceBuffer<float2>& partial, DeviceBuffer<float2>& stats,
                float2* host, cudaStream_t s) {
    long long most = 0;
    for (int k = 0; k < count; ++k) most = std::max(most, box_pixels(boxes.box[k].b));
    // About 16 pixels per thread (a box reaching past the frame is clipped there, so this may overcount).
    const int blocks = int(std::clamp<long long>(most / (kThreads * 16), 1, kRangeBlocksMax));
    partial.reserve(std::size_t(count) * blocks);
    stats.reserve(count);
    box_range_partial<<<dim3(blocks, count), kThreads, 0, s>>>(boxes, partial.get());
    CUDA_CHECK_LAUNCH("box_range_partial");
    merge_ranges<<<count, kThreads, 0, s>>>(partial.get(), blocks, stats.get());
    CUDA_CHECK_LAUNCH("merge_ranges");
    CUDA_CHECK(cudaMemcpyAsync(host, stats.get(), count * sizeof(float2), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
}
}  // namespace

std::pair<float, float> DeviceFeatureMaker::range(const DeviceFeatures& f, const RefineBox& box, cudaStream_t s) {
    float2 r[1];
    box_ranges(RangeBoxes{{{f.smooth.get(), f.geometry, box}}}, 1, partial_, stats_, r, s);
    return {r[0].x, r[0].y};
}

std::pair<std::pair<float, float>, std::pair<float, float>> DeviceFeatureMaker::ranges(const DeviceFeatures& a,
                                                                                       const RefineBox& box_a,
                                                                                       const DeviceFeatures& b,
                                                                                       const RefineBox& box_b,
                                                                                       cudaStream_t s) {
    float2 r[2];
    box_ranges(RangeBoxes{{{a.smooth.get(), a.geometry, box_a}, {b.smooth.get(), b.geometry, box_b}}}, 2, partial_,
               stats_, r, s);
    return {{r[0].x, r[0].y}, {r[1].x, r[1].y}};
}

void download(const DeviceFeatures& f, RefineFeatures& out, cudaStream_t s) {
    const RefineImage& g = f.geometry;
    out.smooth = g.depth > 1 ? ImageF::volume(g.width, g.height, g.depth) : ImageF(g.width, g.height);
    out.coefficients = out.smooth;
    const std::size_t n = out.smooth.pixels.size();
    CUDA_CHECK(cudaMemcpyAsync(out.smooth.pixels.data(), f.smooth.get(), n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(out.coefficients.pixels.data(), f.coefficients.get(), n * sizeof(float),
                               cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    out.levels = f.levels;
}

RefineFeatures refine_features(const RawFrame& frame, RefineOn on, const PreprocessParams& search, float sigma,
                               int gpu) {
    select_device(gpu);
    Stream s;
    PreprocessParams edges = search;
    edges.sobel = true;  // the CPU's edges are always the Sobel magnitude of the box mean
    DevicePreprocessor pre(edges);
    const float* source = pre.normalise(frame, s);
    if (on == RefineOn::edges) source = pre.edges(frame.width, frame.height, frame.depth, s);
    DeviceFeatureMaker maker;
    DeviceFeatures f;
    maker.make(source, {frame.width, frame.height, frame.depth}, on, sigma, f, s);
    RefineFeatures out;
    download(f, out, s);
    return out;
}

}  // namespace stackalign::cuda
