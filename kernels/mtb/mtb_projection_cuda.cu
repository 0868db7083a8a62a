#include "mtb_projection_cuda.cuh"

namespace stackalign::cuda {
namespace {

// Brightness histogram with per-row private histograms: each warp takes one
// row at a time and counts into its own copy, and copy w of level b sits at
// b * kWarps + w, so two warps hitting the same level hit different banks
// (kWarps = 8 consecutive words). The copies are merged once per block.
constexpr int kWarps = 8;
__global__ void __launch_bounds__(kWarps * 32)
brightness_histogram(const float* __restrict__ v, int width, int height, std::uint32_t* __restrict__ out) {
    __shared__ std::uint32_t h[kBrightnessLevels * kWarps];
    for (int k = threadIdx.x; k < kBrightnessLevels * kWarps; k += blockDim.x) h[k] = 0;
    __syncthreads();
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int y = blockIdx.x * kWarps + warp; y < height; y += gridDim.x * kWarps) {
        const float* row = v + std::size_t(y) * width;
        for (int x = lane; x < width; x += 32) atomicAdd(&h[brightness_level(row[x]) * kWarps + warp], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < kBrightnessLevels; b += blockDim.x) {
        std::uint32_t c = 0;
        for (int w = 0; w < kWarps; ++w) c += h[b * kWarps + w];
        if (c) atomicAdd(&out[b], c);
    }
}

// As on the host (mtb_thresholds); median, lo and hi stored after the counts.
__global__ void thresholds_of(std::uint32_t* __restrict__ h, int band) {
    const MtbThresholds t = mtb_thresholds(h, band);
    h[kBrightnessLevels] = std::uint32_t(t.median);
    h[kBrightnessLevels + 1] = std::uint32_t(t.lo);
    h[kBrightnessLevels + 2] = std::uint32_t(t.hi);
}

// White and black counts of a region's columns and/or rows, 32 x 32 tiles.
// A tile's pixels are packed as 1 (white) or 1 << 16 (black), so one sum
// counts both. Warp 0 sums columns (lane = column: consecutive words); warp
// 1 sums rows with a staggered start, lane r reading column (r + k) mod 32
// at step k, so the 32 lanes hit 32 different banks without padding.
__global__ void bitmap_counts(const float* __restrict__ v, int width, int x0, int y0, int w, int h,
                              const std::uint32_t* __restrict__ levels, std::int32_t* __restrict__ col_white,
                              std::int32_t* __restrict__ col_black, std::int32_t* __restrict__ row_white,
                              std::int32_t* __restrict__ row_black) {
    __shared__ std::uint32_t tile[32][32];
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;  // 32 x 8 threads
    const int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    const int lo = int(levels[kBrightnessLevels + 1]), hi = int(levels[kBrightnessLevels + 2]);
    for (int r = ty; r < 32; r += 8) {
        const int x = bx + tx, y = by + r;
        std::uint32_t packed = 0;
        if (x < w && y < h) {
            const int level = brightness_level(v[std::size_t(y0 + y) * width + x0 + x]);
            packed = level > hi ? 1u : level < lo ? 1u << 16 : 0u;
        }
        tile[r][tx] = packed;
    }
    __syncthreads();
    if (ty == 0 && col_white && bx + tx < w) {
        std::uint32_t sum = 0;
        for (int r = 0; r < 32; ++r) sum += tile[r][tx];
        if (sum & 0xffffu) atomicAdd(&col_white[bx + tx], int(sum & 0xffffu));
        if (sum >> 16) atomicAdd(&col_black[bx + tx], int(sum >> 16));
    }
    if (ty == 1 && row_white && by + tx < h) {
        std::uint32_t sum = 0;
        for (int k = 0; k < 32; ++k) sum += tile[tx][(tx + k) & 31];
        if (sum & 0xffffu) atomicAdd(&row_white[by + tx], int(sum & 0xffffu));
        if (sum >> 16) atomicAdd(&row_black[by + tx], int(sum >> 16));
    }
}

}  // namespace

MtbProjections DeviceMtb::run(const RawFrame& frame, cudaStream_t s) {
    if (frame.depth > 1) throw UnsupportedError("mtb-projection aligns 2D frames, not volumes");
    const SearchWindow& w = params_.window;
    const ShiftRange& m = params_.max_shift;
    check_window_fits(MiSearchParams{0, Metric::mi, 1, w, m}, frame.width, frame.height);
    const float* v = pre_.normalise(frame, s);
    histogram_.reserve(kBrightnessLevels + 3);
    CUDA_CHECK(cudaMemsetAsync(histogram_.get(), 0, (kBrightnessLevels + 3) * 4, s));
    const int blocks = std::min(1024, (frame.height + kWarps - 1) / kWarps);
    brightness_histogram<<<blocks, kWarps * 32, 0, s>>>(v, frame.width, frame.height, histogram_.get());
    CUDA_CHECK_LAUNCH("brightness_histogram");
    thresholds_of<<<1, 1, 0, s>>>(histogram_.get(), params_.band);
    CUDA_CHECK_LAUNCH("thresholds_of");

    const int cols = w.width + 2 * m.x, rows = w.height + 2 * m.y;
    const std::size_t total = 2 * std::size_t(cols) + 2 * std::size_t(rows);
    counts_.reserve(total);
    CUDA_CHECK(cudaMemsetAsync(counts_.get(), 0, total * 4, s));
    std::int32_t* cw = counts_.get();
    std::int32_t* cb = cw + cols;
    std::int32_t* rw = cb + cols;
    std::int32_t* rb = rw + rows;
    // Columns over the window's rows; rows over the window's columns.
    bitmap_counts<<<dim3((cols + 31) / 32, (w.height + 31) / 32), 256, 0, s>>>(
        v, frame.width, w.x - m.x, w.y, cols, w.height, histogram_.get(), cw, cb, nullptr, nullptr);
    CUDA_CHECK_LAUNCH("bitmap_counts (columns)");
    bitmap_counts<<<dim3((w.width + 31) / 32, (rows + 31) / 32), 256, 0, s>>>(
        v, frame.width, w.x, w.y - m.y, w.width, rows, histogram_.get(), nullptr, nullptr, rw, rb);
    CUDA_CHECK_LAUNCH("bitmap_counts (rows)");

    std::vector<std::int32_t> all(total);
    std::uint32_t levels[3] = {0, 0, 0};
    CUDA_CHECK(cudaMemcpyAsync(all.data(), counts_.get(), total * 4, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(levels, histogram_.get() + kBrightnessLevels, sizeof levels, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    MtbProjections out;
    out.levels = {int(levels[0]), int(levels[1]), int(levels[2])};
    out.col_white.assign(all.begin(), all.begin() + cols);
    out.col_black.assign(all.begin() + cols, all.begin() + 2 * cols);
    out.row_white.assign(all.begin() + 2 * cols, all.begin() + 2 * cols + rows);
    out.row_black.assign(all.begin() + 2 * cols + rows, all.end());
    return out;
}

std::vector<std::uint32_t> DeviceMtb::last_histogram(cudaStream_t s) const {
    std::vector<std::uint32_t> h(kBrightnessLevels);
    CUDA_CHECK(cudaMemcpyAsync(h.data(), histogram_.get(), kBrightnessLevels * 4, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    return h;
}

MtbProjections mtb_projections(const RawFrame& frame, const MtbParams& p, int gpu) {
    select_device(gpu);
    Stream s;
    return DeviceMtb(p).run(frame, s);
}

std::vector<std::uint32_t> brightness_histogram(const RawFrame& frame, int gpu) {
    select_device(gpu);
    Stream s;
    MtbParams p;
    p.window = {0, 0, 0, frame.width, frame.height, 1};
    DeviceMtb mtb(p);
    mtb.run(frame, s);
    return mtb.last_histogram(s);
}

}  // namespace stackalign::cuda
