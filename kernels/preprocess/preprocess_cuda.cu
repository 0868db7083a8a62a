#include <cub/device/device_reduce.cuh>
#include <cmath>
#include <thrust/iterator/transform_iterator.h>

#include "../apply/warp_kernel.cuh"
#include "../block_reduce.cuh"
#include "preprocess_cuda.cuh"
#include "sobel3d.hpp"

namespace stackalign::cuda {
namespace {

constexpr int threads = 256;
int blocks_for(std::size_t n) { return int((n + threads - 1) / threads); }

template <typename T>
__global__ void to_float(const T* __restrict__ in, float* __restrict__ out, std::size_t n) {
    const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    if (i < n) out[i] = float(in[i]);
}

// Non-finite pixels must not move min or max (the CPU skips them).
struct FiniteRange {
    __host__ __device__ float2 operator()(float v) const {
        return isfinite(v) ? make_float2(v, v)
                           : make_float2(INFINITY,
                                         -INFINITY);
    }
};
struct MaxOp {
    __host__ __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

__global__ void normalise(const float* __restrict__ in, float* __restrict__ out, std::size_t n,
                          const float2* __restrict__ range) {
    const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    const float lo = range->x, hi = range->y;
    if (!(hi > lo)) {
        out[i] = 0.0f;
        return;
    }
    const float scale = 255.0f / (hi - lo);
    const float v = in[i];
    out[i] = isfinite(v) ? (v - lo) * scale : 0.0f;
}

// Grids are (columns / threads, rows, slices); a frame is one slice.
__device__ std::size_t voxel(int x, int y, int z, int w, int h) { return (std::size_t(z) * h + y) * w + x; }

__global__ void box_rows(const float* __restrict__ in, float* __restrict__ out, int w, int h, int r) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
    if (x >= w) return;
    const float* src = in + voxel(0, y, z, w, h);
    float acc = 0.0f;
    for (int i = -r; i <= r; ++i) acc += src[min(max(x + i, 0), w - 1)];
    out[voxel(x, y, z, w, h)] = acc;
}

__global__ void box_cols(const float* __restrict__ in, float* __restrict__ out, int w, int h, int r, float inv) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
    if (x >= w) return;
    float acc = 0.0f;
    for (int j = -r; j <= r; ++j) acc += in[voxel(x, min(max(y + j, 0), h - 1), z, w, h)];
    out[voxel(x, y, z, w, h)] = acc * inv;
}

__global__ void box_slices(const float* __restrict__ in, float* __restrict__ out, int w, int h, int d, int r, float inv) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
    if (x >= w) return;
    float acc = 0.0f;
    for (int k = -r; k <= r; ++k) acc += in[voxel(x, y, min(max(z + k, 0), d - 1), w, h)];
    out[voxel(x, y, z, w, h)] = acc * inv;
}

__global__ void sobel3d(const float* __restrict__ in, float* __restrict__ out, int w, int h, int d) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
    if (x >= w) return;
    out[voxel(x, y, z, w, h)] = sobel3d_magnitude(in, w, h, d, x, y, z);
}

__global__ void sobel(const float* __restrict__ in, float* __restrict__ out, int w, int h) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= w) return;
    const float* up = in + std::size_t(max(y - 1, 0)) * w;
    const float* mid = in + std::size_t(y) * w;
    const float* dn = in + std::size_t(min(y + 1, h - 1)) * w;
    const int l = max(x - 1, 0), r = min(x + 1, w - 1);
    const float gx = (up[r] + 2.0f * mid[r] + dn[r]) - (up[l] + 2.0f * mid[l] + dn[l]);
    const float gy = (dn[l] + 2.0f * dn[x] + dn[r]) - (up[l] + 2.0f * up[x] + up[r]);
    out[std::size_t(y) * w + x] = sqrtf(gx * gx + gy * gy);
}

__device__ inline std::uint8_t bin_of(float v, float threshold, int bins, float top) {
    const float scale = top > threshold ? float(bins - 1) / (top - threshold) : 0.0f;
    int b = 0;
    if (v > 0.0f && v >= threshold) b = min(bins - 1, 1 + int((v - threshold) * scale));
    return std::uint8_t(b);
}

__global__ void quantize(const float* __restrict__ in, std::uint8_t* __restrict__ out, std::size_t n, float threshold,
                         int bins, const float* __restrict__ top_ptr) {
    const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    if (i >= n) return;
    out[i] = bin_of(in[i], threshold, bins, *top_ptr);
}

// quantize at a PixelSample: output pixel (i, j) from input (x + stride i, y + stride j).
__global__ void quantize_sample(const float* __restrict__ in, int width, PixelSample s, int out_width,
                                std::size_t n, std::uint8_t* __restrict__ out, float threshold, int bins,
                                const float* __restrict__ top_ptr) {
    const std::size_t o = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    if (o >= n) return;
    const std::size_t i = o % out_width, j = o / out_width;
    out[o] = bin_of(in[(s.y + s.stride * j) * std::size_t(width) + s.x + s.stride * i], threshold, bins, *top_ptr);
}

}  // namespace

const float* DevicePreprocessor::normalise(const RawFrame& frame, cudaStream_t s) {
    return normalise(frame, nullptr, false, s);
}

const float* DevicePreprocessor::normalise(const RawFrame& frame, const FrameWarp& warp, cudaStream_t s) {
    return normalise(frame, &warp, false, s);
}

const float* DevicePreprocessor::normalise(const RawFrame& frame, const FrameWarp* warp, bool uploaded,
                                           cudaStream_t s) {
    const std::size_t n = frame.pixel_count();
    a_.reserve(n);
    b_.reserve(n);
    stats_.reserve(4);
    if (!uploaded || raw_bytes_ != frame.bytes.size()) {
        raw_bytes_ = 0;
        raw_.reserve(frame.bytes.size());
        CUDA_CHECK(cudaMemcpyAsync(raw_.get(), frame.bytes.data(), frame.bytes.size(), cudaMemcpyHostToDevice, s));
        raw_bytes_ = frame.bytes.size();
    }
    if (warp) warped_.reserve(frame.bytes.size());
    visit_pixels(frame, [&](const auto* host) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(host)>>;
        const T* source = reinterpret_cast<const T*>(raw_.get());
        if (warp) {
            T* out = reinterpret_cast<T*>(warped_.get());
            warp_pixels<T><<<dim3((frame.width + threads - 1) / threads, frame.height), threads, 0, s>>>(
                source, out, frame.width, frame.height, *warp);
            source = out;
        }
        to_float<T><<<blocks_for(n), threads, 0, s>>>(source, a_.get(), n);
    });
    CUDA_CHECK_LAUNCH("to_float");

    float2* range = reinterpret_cast<float2*>(stats_.get());
    float* top = stats_.get() + 2;
    auto ranges = thrust::make_transform_iterator(a_.get(), FiniteRange{});
    const float inf = INFINITY;
    std::size_t need_range = 0, need_max = 0;
    CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, need_range, ranges, range, n, MergeRange{}, make_float2(inf, -inf), s));
    CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, need_max, a_.get(), top, n, MaxOp{}, 0.0f, s));
    scratch_.reserve(std::max(need_range, need_max));
    std::size_t bytes = scratch_.size();
    CUDA_CHECK(cub::DeviceReduce::Reduce(scratch_.get(), bytes, ranges, range, n, MergeRange{}, make_float2(inf, -inf), s));

    stackalign::cuda::normalise<<<blocks_for(n), threads, 0, s>>>(a_.get(), b_.get(), n, range);
    CUDA_CHECK_LAUNCH("normalise");
    return b_.get();
}

void DevicePreprocessor::run(const RawFrame& frame, std::uint8_t* d_bins, cudaStream_t s) {
    normalise(frame, s);
    quantize(edges(frame.width, frame.height, frame.depth, s), frame.pixel_count(), d_bins, s);
}

const float* DevicePreprocessor::edges(int w, int h, int d, cudaStream_t s) {
    float* cur = b_.get();
    float* other = a_.get();
    const dim3 grid((w + threads - 1) / threads, h, d);
    if (params_.mean_radius > 0) {
        const int r = params_.mean_radius, side = 2 * r + 1;
        box_rows<<<grid, threads, 0, s>>>(cur, other, w, h, r);
        CUDA_CHECK_LAUNCH("box_rows");
        if (d == 1) {
            box_cols<<<grid, threads, 0, s>>>(other, cur, w, h, r, 1.0f / float(side * side));
            CUDA_CHECK_LAUNCH("box_cols");
        } else {  // as mean_filter_3d: sums along x, y, z, one scaling at the end
            box_cols<<<grid, threads, 0, s>>>(other, cur, w, h, r, 1.0f);
            CUDA_CHECK_LAUNCH("box_cols");
            box_slices<<<grid, threads, 0, s>>>(cur, other, w, h, d, r, 1.0f / float(side * side * side));
            CUDA_CHECK_LAUNCH("box_slices");
            std::swap(cur, other);
        }
    }
    if (params_.sobel) {
        if (d == 1) sobel<<<grid, threads, 0, s>>>(cur, other, w, h);
        else sobel3d<<<grid, threads, 0, s>>>(cur, other, w, h, d);
        CUDA_CHECK_LAUNCH("sobel");
        std::swap(cur, other);
    }
    return cur;
}

const float* DevicePreprocessor::top(const float* edges, std::size_t n, cudaStream_t s) {
    float* top = stats_.get() + 2;
    std::size_t bytes = scratch_.size();
    CUDA_CHECK(cub::DeviceReduce::Reduce(scratch_.get(), bytes, edges, top, n, MaxOp{}, 0.0f, s));
    return top;
}

void DevicePreprocessor::quantize(const float* edges, std::size_t n, std::uint8_t* d_bins, cudaStream_t s) {
    const float* top = this->top(edges, n, s);
    stackalign::cuda::quantize<<<blocks_for(n), threads, 0, s>>>(edges, d_bins, n, params_.threshold, params_.bins, top);
    CUDA_CHECK_LAUNCH("quantize");
}

void DevicePreprocessor::quantize(const float* edges, int width, int height, const PixelSample& sample,
                                  std::uint8_t* d_bins, cudaStream_t s) {
    const float* top = this->top(edges, std::size_t(width) * height, s);  // the whole frame's, as quantize's
    const int out_width = sample.width(width);
    const std::size_t out = std::size_t(out_width) * sample.height(height);
    quantize_sample<<<blocks_for(out), threads, 0, s>>>(edges, width, sample, out_width, out, d_bins,
                                                         params_.threshold, params_.bins, top);
    CUDA_CHECK_LAUNCH("quantize_sample");
}

namespace {
BinImage download(const DeviceBuffer<std::uint8_t>& d, int w, int h, int depth, cudaStream_t s) {
    BinImage out = BinImage::volume(w, h, depth);
    CUDA_CHECK(cudaMemcpyAsync(out.pixels.data(), d.get(), out.size(), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    return out;
}
}  // namespace

BinImage preprocess(const RawFrame& frame, const PreprocessParams& params, int gpu) {
    select_device(gpu);
    Stream s;
    DevicePreprocessor pre(params);
    DeviceBuffer<std::uint8_t> bins(frame.pixel_count());
    pre.run(frame, bins.get(), s);
    return download(bins, frame.width, frame.height, frame.depth, s);
}

RawFrame warp_frame(const RawFrame& frame, const FrameWarp& warp, int gpu) {
    select_device(gpu);
    Stream s;
    DevicePreprocessor pre(PreprocessParams{});
    pre.normalise(frame, warp, s);
    RawFrame out = frame;
    CUDA_CHECK(cudaMemcpyAsync(out.bytes.data(), pre.warped(), out.bytes.size(), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    return out;
}

}  // namespace stackalign::cuda
