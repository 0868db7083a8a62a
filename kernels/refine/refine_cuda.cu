#include <algorithm>
#include <array>
#include <string>

#include "refine_cuda.cuh"
#include "../tuned_choice.cuh"

namespace stackalign::cuda {
namespace {

constexpr int kRefineThreads = 256;
// Blocks of the runs' kernel resident on an SM (its launch bounds), which
// the batches' block counts are made for.
constexpr int kRefineBlocksPerSm = 4;

// Pixel i of the window, x fastest.
__device__ inline void window_pixel(const SearchWindow& w, long long i, int& x, int& y, int& z) {
    const int row = int(i / w.width);
    x = w.x + int(i % w.width), y = w.y + row % w.height, z = w.z + row / w.height;
}

// Block (pixel slice, shift): the block's pixels into its shared histogram,
// then into the shift's global one (parzen_block_begin / _end). Pixels in
// window order, so a warp reads neighbouring pixels and their taps share
// cache lines. (A scattered order, pixel i * stride mod count, had been
// chosen to keep a warp's 16 shared atomics per pixel off the same bins;
// under Nsight Compute (`bash bench/device.sh profile`) it was the slower one: 253 against
// 181 us a batch on the tilt series, 204 against 157 us on the standard
// job. Its taps came from scattered rows, through L2.)
__global__ void __launch_bounds__(kRefineThreads)
parzen_kernel(const float* __restrict__ ref, RefineImage ref_geometry, const float* __restrict__ coefficients,
              RefineImage mov_geometry, RefineParams p, const ShiftTaps* __restrict__ taps,
              unsigned long long* __restrict__ hist) {
    extern __shared__ unsigned int shared_hist[];  // bins^2 words and their wrap counts
    __shared__ float knots[kLevelKnots + 1];
    const SharedParzen h = parzen_block_begin(shared_hist, knots, p);
    const ShiftTaps t = taps[blockIdx.y];
    const SearchWindow& w = p.window;
    const long long pixels = (long long)(w.width) * w.height * w.depth;
    for (long long n = (long long)(blockIdx.x) * blockDim.x + threadIdx.x; n < pixels;
         n += (long long)(gridDim.x) * blockDim.x) {
        int x, y, z;
        window_pixel(w, n, x, y, z);
        const float a = ref[((long long)(z) * ref_geometry.height + y) * ref_geometry.width + x];
        const float b = interpolate(coefficients, mov_geometry, x, y, z, t);
        parzen_add(a, b, p, knots, [&](int bin, std::uint32_t weight) { h.add(bin, weight); });
    }
    parzen_block_end(h, hist + (long long)(blockIdx.y) * p.bins * p.bins, p.bins);
}

// The moving values of a run of kParzenRun pixels of one row of a 2D
// window, (x, y) its first: interpolate()'s sums, the same operations in
// the same order (so the same bits), from the run's 4 x (kParzenRun + 3)
// coefficients, each loaded once, where interpolate() loads 16 a pixel.
// Every column's clamp is interpolate()'s for the tap that reads it.
// On the H200's 61 x 4096^2 series a pair's refinement took 14.5 ms
// against 21.3 with interpolate() per pixel (`build/bench loads
// build/bench-stages/acquisition_cuda.toml` after `bench stages
// acquisition`), the same shifts.csv.
constexpr int kParzenRun = 8;
__device__ inline void interpolate_run(const float* __restrict__ c, const RefineImage& g, int x, int y,
                                       const ShiftTaps& t, float (&b)[kParzenRun]) {
    float line[kParzenRun];
#pragma unroll
    for (int p = 0; p < kParzenRun; ++p) b[p] = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const float* row = c + (long long)(clamp_index(y + t.base[1] - 1 + j, g.height)) * g.width;
#pragma unroll
        for (int p = 0; p < kParzenRun; ++p) line[p] = 0.0f;
        // Column k is tap i = k - p of pixel p; taps in increasing i, as interpolate() adds them.
#pragma unroll
        for (int k = 0; k < kParzenRun + 3; ++k) {
            const float v = row[clamp_index(x + t.base[0] - 1 + k, g.width)];
#pragma unroll
            for (int p = 0; p < kParzenRun; ++p)
                if (k - p >= 0 && k - p < 4) line[p] += v * t.w[0][k - p];
        }
#pragma unroll
        for (int p = 0; p < kParzenRun; ++p) b[p] += line[p] * t.w[1][j];
    }
}

// The same histograms (ParzenAdd::runs): each thread takes kParzenRun
// neighbouring pixels in window order. Neighbours mostly fall in the same
// 4 x 4 cells, so it sums their weights in registers and gives the shared
// histogram one atomic a cell only when its cells move or the run ends:
// where a warp's lanes all add to the same cells, their atomics wait on one
// another. The sums are integers (at most 8 x 2^23 a register), so any
// grouping gives the same words. Four blocks an SM (64 registers, a few
// spilled): 106 against 126 us a batch with three on the tilt series.
// A run within one row of a 2D window takes its moving values from
// interpolate_run; a run across rows, or in a volume, pixel by pixel.
__global__ void __launch_bounds__(kRefineThreads, kRefineBlocksPerSm)
parzen_runs_kernel(const float* __restrict__ ref, RefineImage ref_geometry, const float* __restrict__ coefficients,
                   RefineImage mov_geometry, RefineParams p, const ShiftTaps* __restrict__ taps,
                   unsigned long long* __restrict__ hist) {
    extern __shared__ unsigned int shared_hist[];
    __shared__ float knots[kLevelKnots + 1];
    const SharedParzen h = parzen_block_begin(shared_hist, knots, p);
    const ShiftTaps t = taps[blockIdx.y];
    const SearchWindow& w = p.window;
    const long long pixels = (long long)(w.width) * w.height * w.depth;
    const long long runs = (pixels + kParzenRun - 1) / kParzenRun;
    const bool planar = mov_geometry.depth == 1;
    for (long long r = (long long)(blockIdx.x) * blockDim.x + threadIdx.x; r < runs;
         r += (long long)(gridDim.x) * blockDim.x) {
        std::uint32_t held[16];
        int row = -1, col = 0;  // the first held cell; none yet
        auto give = [&] {
#pragma unroll
            for (int k = 0; k < 16; ++k)
                if (held[k]) h.add((row + k / 4) * p.bins + col + k % 4, held[k]);
        };
        auto take = [&](float a, float b) {
            const ParzenPlace ra = place_reference(a, p);
            const ParzenPlace rb = place_moving(b, p, knots);
            if (ra.bin != row || rb.bin != col) {
                if (row >= 0) give();
                row = ra.bin, col = rb.bin;
#pragma unroll
                for (int k = 0; k < 16; ++k) held[k] = 0;
            }
#pragma unroll
            for (int k = 0; k < 16; ++k) held[k] += parzen_weight(ra.w[k / 4], rb.w[k % 4]);
        };
        const long long first = r * kParzenRun, end = min(pixels, first + kParzenRun);
        int x, y, z;
        window_pixel(w, first, x, y, z);
        if (planar && end - first == kParzenRun && x + kParzenRun <= w.x + w.width) {
            float b[kParzenRun];
            interpolate_run(coefficients, mov_geometry, x, y, t, b);
            const float* a = ref + (long long)(y) * ref_geometry.width + x;
#pragma unroll 1
            for (int k = 0; k < kParzenRun; ++k) take(a[k], b[k]);
        } else {
#pragma unroll 1
            for (long long n = first; n < end; ++n) {
                window_pixel(w, n, x, y, z);
                take(ref[((long long)(z) * ref_geometry.height + y) * ref_geometry.width + x],
                     interpolate(coefficients, mov_geometry, x, y, z, t));
            }
        }
        if (row >= 0) give();
    }
    parzen_block_end(h, hist + (long long)(blockIdx.y) * p.bins * p.bins, p.bins);
}

// Block (pixel slice, shift): the pixels' NCC moments, linear order (no
// shared atomics to spread).
__global__ void __launch_bounds__(kRefineThreads)
moments_kernel(const float* __restrict__ ref_coefficients, RefineImage ref_geometry,
               const float* __restrict__ coefficients, RefineImage mov_geometry, SearchWindow w,
               const ShiftTaps* __restrict__ taps, unsigned long long* __restrict__ out) {
    const ShiftTaps t = taps[blockIdx.y];
    const long long pixels = (long long)(w.width) * w.height * w.depth;
    PairMoments m;
    for (long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x; i < pixels;
         i += (long long)(gridDim.x) * blockDim.x) {
        int x, y, z;
        window_pixel(w, i, x, y, z);
        m.add(reference_value(ref_coefficients, ref_geometry, x, y, z), interpolate(coefficients, mov_geometry, x, y, z, t));
    }
    moments_block_end(m, out + (long long)(blockIdx.y) * kMomentCount);
}

}  // namespace

int statistics_blocks(long long samples, int threads, std::size_t batch, int cap, int sms, int per_sm) {
    const auto per_thread = [&](long long n) {
        return int(std::clamp<long long>((samples + threads * n - 1) / (threads * n), 1, cap));
    };
    const std::size_t n = std::max<std::size_t>(batch, 1);
    const int filling = int((std::size_t(per_sm) * sms + n - 1) / n);
    return std::max(per_thread(32), std::min(per_thread(4), filling));
}

int whole_waves(int blocks, std::size_t batch, int slots) {
    const long long n = (long long)(std::max<std::size_t>(batch, 1)), all = (long long)(blocks) * n;
    return all <= slots ? blocks : int(std::max(1LL, (all / slots) * slots / n));
}

void DeviceRefiner::upload(DeviceFeatures& slot, const RefineFeatures& f, cudaStream_t s) {
    const std::size_t n = f.smooth.size();
    slot.smooth.reserve(n);
    slot.coefficients.reserve(n);
    CUDA_CHECK(cudaMemcpyAsync(slot.smooth.get(), f.smooth.pixels.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(slot.coefficients.get(), f.coefficients.pixels.data(), n * sizeof(float),
                               cudaMemcpyHostToDevice, s));
    slot.geometry = {f.smooth.width, f.smooth.height, f.smooth.depth};
    slot.levels = f.levels;
    CUDA_CHECK(cudaStreamSynchronize(s));  // the host features may be freed on return
}

std::vector<std::uint64_t> DeviceRefiner::statistics(const DeviceFeatures& ref, const DeviceFeatures& mov,
                                                     const RefineParams& p, const std::vector<ContinuousShift>& shifts,
                                                     cudaStream_t s) {
    const std::size_t size = statistics_size(p);
    std::vector<ShiftTaps> taps;
    for (const ContinuousShift& c : shifts) taps.push_back(shift_taps(c));
    taps_.reserve(taps.size());
    hist_.reserve(taps.size() * size);
    CUDA_CHECK(cudaMemcpyAsync(taps_.get(), taps.data(), taps.size() * sizeof(ShiftTaps), cudaMemcpyHostToDevice, s));
    const long long pixels = (long long)(p.window.width) * p.window.height * p.window.depth;
    // Four blocks per SM (54 registers a thread allow four of 256 threads):
    // 164 against 181 us a batch with two on the tilt series, 136 against 157
    // on the standard job (`bash bench/device.sh profile`).
    const int blocks = whole_waves(statistics_blocks(pixels, kRefineThreads, taps.size(), 64, sms_, kRefineBlocksPerSm),
                                   taps.size(), kRefineBlocksPerSm * sms_);
    const dim3 grid(blocks, unsigned(taps.size()));
    auto launch_parzen = [&](ParzenAdd how) {
        const auto kernel = how == ParzenAdd::runs ? parzen_runs_kernel : parzen_kernel;
        kernel<<<grid, kRefineThreads, size * sizeof(unsigned long long), s>>>(
            ref.smooth.get(), ref.geometry, mov.coefficients.get(), mov.geometry, p, taps_.get(), hist_.get());
        CUDA_CHECK_LAUNCH(how == ParzenAdd::runs ? "parzen_runs_kernel" : "parzen_kernel");
    };
    if (p.metric != Metric::ncc && add_ == ParzenAdd::automatic) {
        // Once per GPU, window shape and bin count in the process.
        int gpu = 0;
        CUDA_CHECK(cudaGetDevice(&gpu));
        const TunedChoice<ParzenAdd>& tuned = tuned_on_gpu<ParzenAdd>(
            "Parzen histograms", gpu, std::array<int, 4>{p.window.width, p.window.height, p.window.depth, p.bins},
            [](ParzenAdd way) { return way != ParzenAdd::automatic; },
            [&](TunedChoice<ParzenAdd>& timing) {
                // Each after a warm-up launch, the better of two: other searchers
                // may share the GPU meanwhile. The sums so made are cleared below.
                for (const ParzenAdd way : {ParzenAdd::pixels, ParzenAdd::runs}) {
                    launch_parzen(way);
                    timing.timed(way, name_of(way),
                                 std::min(timed_ms(s, [&] { launch_parzen(way); }), timed_ms(s, [&] { launch_parzen(way); })));
                }
            });
        add_ = tuned.choice;
        tuning_ = tuned.how("batch");
    }
    CUDA_CHECK(cudaMemsetAsync(hist_.get(), 0, taps.size() * size * sizeof(unsigned long long), s));
    if (p.metric == Metric::ncc) {
        moments_kernel<<<grid, kRefineThreads, 0, s>>>(ref.coefficients.get(), ref.geometry, mov.coefficients.get(),
                                                        mov.geometry, p.window, taps_.get(), hist_.get());
        CUDA_CHECK_LAUNCH("moments_kernel");
    } else {
        launch_parzen(add_);
    }
    std::vector<std::uint64_t> out(taps.size() * size);
    CUDA_CHECK(cudaMemcpyAsync(out.data(), hist_.get(), out.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    return out;
}

std::string DeviceRefiner::describe() const {
    if (add_ == ParzenAdd::automatic) return {};
    return "Parzen histograms by " + name_of(add_) + (tuning_.empty() ? "" : " (" + tuning_ + ")");
}

std::vector<std::uint64_t> refine_statistics(const RefineFeatures& ref, const RefineFeatures& mov, const RefineParams& p,
                                             const std::vector<ContinuousShift>& shifts, int gpu, ParzenAdd add) {
    select_device(gpu);
    Stream s;
    DeviceRefiner refiner(add);
    DeviceFeatures r, m;
    refiner.upload(r, ref, s);
    refiner.upload(m, mov, s);
    return refiner.statistics(r, m, p, shifts, s);
}

}  // namespace stackalign::cuda
