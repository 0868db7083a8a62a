#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "mi_search_cuda.cuh"

namespace stackalign::cuda {
namespace {

// ---- block-level device logic ---------------------------------------------

template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity) {
    __shared__ T partial[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    __syncthreads();  // partial[] may still be read by a previous call
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? partial[lane] : identity;
        for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
        if (lane == 0) partial[0] = v;
    }
    __syncthreads();
    return partial[0];
}
struct Sum {
    template <typename T>
    __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
    __device__ double operator()(double a, double b) const { return fmax(a, b); }
};
struct Min {
    __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const { return a < b ? a : b; }
};

struct WindowArgs {
    const std::uint8_t* ref;
    const std::uint8_t* mov;
    int ref_pitch, ref_height;          // row length and rows per slice of each image
    int mov_pitch, mov_height;
    const WindowCorner* corners;        // one per searched window (landmarks: per point)
    int ww, wh, wd;                     // window size
    int mx, my, mz, side_x, side_y;     // shift half-ranges; candidates per row and per plane
    int candidates, bins;               // candidates per window
    Metric metric;
};

// Visits every window pixel pair of candidate `cand` of window `win`: a warp
// walks a row, so loads of both images are contiguous across lanes; rows of
// all slices are one sequence, so a 2D window (wd = 1) costs nothing extra.
// A warp steps to its next row by pointer increments, never dividing: a 3D
// landmark window's rows are ~31 pixels, one pass of the lanes, so a
// division and a 64-bit address per row cost more than the row's pairs.
template <typename F>
__device__ void for_each_pair(const WindowArgs& a, int win, int cand, F&& f) {
    const WindowCorner c = a.corners[win];
    const int sx = cand % a.side_x - a.mx, sy = cand / a.side_x % a.side_y - a.my, sz = cand / (a.side_x * a.side_y) - a.mz;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int rows = a.wh * a.wd;
    int y = warp % a.wh;
    const int z = warp / a.wh, step_y = warps % a.wh, step_z = warps / a.wh;
    const std::uint8_t* r = a.ref + (std::size_t(c.z + z) * a.ref_height + c.y + y) * a.ref_pitch + c.x;
    const std::uint8_t* m = a.mov + (std::size_t(c.z + z + sz) * a.mov_height + c.y + y + sy) * a.mov_pitch + c.x + sx;
    const std::ptrdiff_t ref_slice = std::ptrdiff_t(a.ref_height) * a.ref_pitch, mov_slice = std::ptrdiff_t(a.mov_height) * a.mov_pitch;
    const std::ptrdiff_t ref_step = step_z * ref_slice + std::ptrdiff_t(step_y) * a.ref_pitch,
                         mov_step = step_z * mov_slice + std::ptrdiff_t(step_y) * a.mov_pitch;
    // Wrapping y past the window's last row: on to the next slice.
    const std::ptrdiff_t ref_wrap = ref_slice - std::ptrdiff_t(a.wh) * a.ref_pitch,
                         mov_wrap = mov_slice - std::ptrdiff_t(a.wh) * a.mov_pitch;
    for (int row = warp; row < rows; row += warps) {
        for (int x = lane; x < a.ww; x += 32) f(unsigned(__ldg(r + x)), unsigned(__ldg(m + x)));
        r += ref_step;
        m += mov_step;
        y += step_y;
        if (y >= a.wh) {
            y -= a.wh;
            r += ref_wrap;
            m += mov_wrap;
        }
    }
}

// Sum of one warp's values, in every lane.
__device__ std::uint32_t warp_sum(std::uint32_t v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// MI = log N - (sum c log c over marginals - over joint) / N, as mi_from_histogram.
// Row r of the histogram starts at h + r * stride (stride >= bins: padded rows).
// Each marginal is summed by one warp, lanes along the row or down the
// column: with rows padded to bins + 1 words both walks hit 32 different
// banks. (One thread per marginal left 14 of 16 warps idle behind 2 x bins
// dependent loads; for a small 3D landmark window that tail cost about as
// much as filling the histogram.)
__device__ double block_mi(const std::uint32_t* h, int bins, int stride, const double* __restrict__ nlogn, double n,
                           Metric metric) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    double marginals = 0, joint = 0;
    for (int m = warp; m < 2 * bins; m += warps) {
        const bool is_row = m < bins;
        const int i = is_row ? m : m - bins;
        std::uint32_t sum = 0;
        for (int k = lane; k < bins; k += 32) sum += is_row ? h[i * stride + k] : h[k * stride + i];
        sum = warp_sum(sum);
        if (lane == 0) marginals += nlogn[sum];
    }
    for (int k = threadIdx.x; k < bins * bins; k += blockDim.x) {
        const std::uint32_t c = h[(k / bins) * stride + k % bins];
        if (c) joint += nlogn[c];
    }
    if (metric == Metric::mi) {
        // One reduction of the difference, as the MI search has always summed.
        const double total = block_reduce(marginals - joint, Sum{}, 0.0);
        return log(n) - total / n;
    }
    // NMI = (H(A) + H(B)) / H(A,B), as score_from_sums on the host.
    const double m_all = block_reduce(marginals, Sum{}, 0.0), j_all = block_reduce(joint, Sum{}, 0.0);
    if (n <= 0) return 1.0;
    const double h_joint = log(n) - j_all / n, h_sum = 2 * log(n) - m_all / n;
    return h_joint > 1e-12 ? h_sum / h_joint : 1.0;
}

// ---- kernels ---------------------------------------------------------------
// Candidates of all windows of a launch are one sequence, window-major: g =
// window * candidates + cand, which is also where MI is stored.

// The design as specified: (0,0) pairs counted in per-thread shared slots,
// every other pair straight into the candidate's global histogram.
__global__ void hist_zero_slot(WindowArgs a, int first, std::uint32_t* __restrict__ hist) {
    extern __shared__ std::uint32_t slots[];
    const int g = first + blockIdx.x;
    const int bb = a.bins * a.bins;
    std::uint32_t* h = hist + std::size_t(blockIdx.x) * bb;
    slots[threadIdx.x] = 0;
    for_each_pair(a, g / a.candidates, g % a.candidates, [&](unsigned ra, unsigned mb) {
        if ((ra | mb) == 0) ++slots[threadIdx.x];
        else atomicAdd(&h[ra * a.bins + mb], 1u);
    });
    const std::uint32_t zeros = block_reduce(slots[threadIdx.x], Sum{}, 0u);
    if (threadIdx.x == 0) h[0] = zeros;  // no other pair maps to bin 0
}

__global__ void mi_from_global(const std::uint32_t* __restrict__ hist, int bins, int first,
                               const double* __restrict__ nlogn, double n, Metric metric, double* __restrict__ mi) {
    const double v = block_mi(hist + std::size_t(blockIdx.x) * bins * bins, bins, bins, nlogn, n, metric);
    if (threadIdx.x == 0) mi[first + blockIdx.x] = v;
}

// The whole joint histogram in shared memory; (0,0) pairs never touch memory
// (their count is the window size minus all other pairs); MI computed in the
// same block, so no histogram ever reaches global memory. Block (cand, window).
// Rows are padded to rs = bins + 1 words: unpadded, a pair's bank would be
// its moving bin alone (64 x r is a multiple of 32 banks), and edge-map bins
// crowd at small values, so one warp's atomics piled onto a few banks; padded,
// the bank is (r + m) mod 32. With copies > 1, lane % copies picks one of
// several replicas (offset by one word), cutting same-address collisions of
// neighbouring pixels. Four 512-thread blocks per SM (<= 32 registers): at
// three, a 2401-candidate search ran 7 waves instead of 5.
constexpr int kSharedThreads = 512;
__global__ void __launch_bounds__(kSharedThreads, 4)
hist_shared(WindowArgs a, int copies, int rs, const double* __restrict__ nlogn, double n, double* __restrict__ mi,
            std::uint32_t* __restrict__ dump) {
    extern __shared__ std::uint32_t h[];
    const std::size_t g = std::size_t(blockIdx.y) * a.candidates + blockIdx.x;
    const int bb = a.bins * a.bins, hs = a.bins * rs, stride = copies > 1 ? hs + 1 : hs;
    for (int k = threadIdx.x; k < copies * stride; k += blockDim.x) h[k] = 0;
    __syncthreads();
    std::uint32_t* mine = h + (threadIdx.x % copies) * stride;
    for_each_pair(a, blockIdx.y, blockIdx.x, [&](unsigned ra, unsigned mb) {
        if ((ra | mb) != 0) atomicAdd(&mine[ra * rs + mb], 1u);
    });
    __syncthreads();
    unsigned long long others = 0;
    for (int k = threadIdx.x; k < hs; k += blockDim.x) {
        std::uint32_t c = h[k];
        for (int r = 1; r < copies; ++r) c += h[r * stride + k];
        h[k] = c;  // each k is owned by one thread: merging in place is safe
        others += c;
    }
    others = block_reduce(others, Sum{}, 0ull);
    if (threadIdx.x == 0) h[0] = std::uint32_t((unsigned long long)(n) - others);
    __syncthreads();
    if (dump)
        for (int k = threadIdx.x; k < bb; k += blockDim.x) dump[g * bb + k] = h[(k / a.bins) * rs + k % a.bins];
    const double v = block_mi(h, a.bins, rs, nlogn, n, a.metric);
    if (threadIdx.x == 0) mi[g] = v;
}

// What the host needs of one window's search: the winner, MI statistics, and
// the winner's neighbours for refinement (gathered here, so one copy brings
// back every window of a launch).
struct DevicePeak {
    int best;
    double mean, stddev;
    double around[3][3];  // (dy-1..dy+1, dx-1..dx+1) in the winner's plane
    double around_z[3];   // dz-1, dz, dz+1
};

// One block per window. Winner selection with the CPU's tie rule
// (peak_from_map): within 1e-9 relative of the maximum, smallest
// |sx|+|sy|+|sz|, then lowest index.
__global__ void find_peak(const double* __restrict__ all_mi, int n, int side_x, int side_y, int side_z, ShiftRange m,
                          DevicePeak* __restrict__ peaks) {
    const double* mi = all_mi + std::size_t(blockIdx.x) * n;
    double best = -INFINITY, sum = 0, sum2 = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const double v = mi[i];
        best = fmax(best, v);
        sum += v;
        sum2 += v * v;
    }
    best = block_reduce(best, Max{}, double(-INFINITY));
    sum = block_reduce(sum, Sum{}, 0.0);
    sum2 = block_reduce(sum2, Sum{}, 0.0);
    const double tol = 1e-9 * fmax(1.0, fabs(best));
    unsigned long long key = ~0ull;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        if (mi[i] < best - tol) continue;
        const int sx = i % side_x - m.x, sy = i / side_x % side_y - m.y, sz = i / (side_x * side_y) - m.z;
        const unsigned long long k = (unsigned long long)(abs(sx) + abs(sy) + abs(sz)) << 32 | unsigned(i);
        key = k < key ? k : key;
    }
    key = block_reduce(key, Min{}, ~0ull);
    if (threadIdx.x != 0) return;
    DevicePeak& out = peaks[blockIdx.x];
    out.best = int(key & 0xffffffffu);
    out.mean = sum / n;
    out.stddev = sqrt(fmax(0.0, sum2 / n - out.mean * out.mean));
    const int x = out.best % side_x, y = out.best / side_x % side_y, z = out.best / (side_x * side_y);
    auto at = [&](int i, int j, int k) {
        const bool inside = i >= 0 && i < side_x && j >= 0 && j < side_y && k >= 0 && k < side_z;
        return inside ? mi[(std::size_t(k) * side_y + j) * side_x + i] : nan("");
    };
    for (int j = -1; j <= 1; ++j)
        for (int i = -1; i <= 1; ++i) out.around[j + 1][i + 1] = at(x + i, y + j, z);
    for (int k = -1; k <= 1; ++k) out.around_z[k + 1] = at(x, y, z + k);
}

}  // namespace

// ---- host driver -----------------------------------------------------------

std::string HistogramPolicy::describe() const {
    std::ostringstream o;
    o << "histogram policy {strategy: " << strategy << ", threads/block: " << threads
      << ", shared bytes/block: " << smem_bytes;
    if (row_stride) o << ", row stride: " << row_stride << " words";
    if (copies > 1) o << ", replicas: " << copies;
    if (candidates_per_launch) o << ", candidates/launch: " << candidates_per_launch;
    o << "}";
    return o.str();
}

namespace {
// Largest dynamic shared memory one block may opt in to on this device.
std::size_t smem_optin(int gpu) {
    int bytes = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, gpu));
    return std::size_t(bytes);
}
// Words of one shared-memory histogram with padded rows (see hist_shared).
std::size_t padded_words(int bins) { return std::size_t(bins) * (bins + 1); }
}  // namespace

std::vector<std::string> available_strategies(const MiSearchParams& p, int gpu) {
    const std::size_t limit = smem_optin(gpu);
    std::vector<std::string> s;
    const std::size_t bytes = padded_words(p.bins) * 4;
    // In the order `make bench-gpu` ranked them on an H100 (docs/benchmarks.md);
    // "auto" times them on the first pair of a run (pair_searcher_cuda.cu).
    if (bytes <= limit) s.push_back("shared");
    if (2 * (bytes + 4) <= limit) s.push_back("replicated");
    s.push_back("zero-slot");
    return s;
}

HistogramPolicy choose_policy(const MiSearchParams& p, const std::string& requested, int gpu) {
    const std::vector<std::string> ok = available_strategies(p, gpu);
    HistogramPolicy policy;
    policy.strategy = requested == "auto" ? ok.front() : requested;
    if (std::find(ok.begin(), ok.end(), policy.strategy) == ok.end())
        throw UnsupportedError("histogram strategy \"" + requested + "\" cannot run " + std::to_string(p.bins) +
                               " bins on this GPU (a " + std::to_string(p.bins) + "x" + std::to_string(p.bins) +
                               " histogram does not fit in shared memory); use \"zero-slot\" or \"auto\"");
    const std::size_t bb = std::size_t(p.bins) * p.bins;
    if (policy.strategy == "shared" || policy.strategy == "replicated") {
        policy.threads = kSharedThreads;
        policy.row_stride = p.bins + 1;
        const std::size_t hs = padded_words(p.bins);
        policy.copies = 1;
        if (policy.strategy == "replicated") {
            // As many replicas as leave room for two blocks per SM, at most 8.
            const std::size_t limit = smem_optin(gpu);
            policy.copies = 8;
            while (policy.copies > 2 && std::size_t(policy.copies) * (hs + 1) * 4 * 2 > limit) policy.copies /= 2;
        }
        policy.smem_bytes = int(std::size_t(policy.copies) * (policy.copies > 1 ? hs + 1 : hs) * 4);
    } else {
        policy.threads = 256;
        policy.smem_bytes = policy.threads * 4;
        // Global histograms in chunks of at most 256 MiB.
        policy.candidates_per_launch =
            int(std::max<std::size_t>(1, std::min<std::size_t>(p.candidates(), (std::size_t(256) << 20) / (bb * 4))));
    }
    return policy;
}

DeviceMiSearch::DeviceMiSearch(const MiSearchParams& p, const std::string& strategy, int gpu)
    : params_(p), policy_(choose_policy(p, strategy, gpu)) {
    const std::vector<double> table = nlogn_table(p.window_pixels());
    nlogn_.reserve(table.size());
    CUDA_CHECK(cudaMemcpy(nlogn_.get(), table.data(), table.size() * sizeof(double), cudaMemcpyHostToDevice));
    // MI of at most 32 MiB of candidates per launch (at least one window's).
    windows_per_launch_ = int(std::clamp<std::size_t>((std::size_t(32) << 20) / (8 * std::size_t(p.candidates())), 1, 65535));
    if (policy_.strategy == "zero-slot") hist_.reserve(std::size_t(policy_.candidates_per_launch) * p.bins * p.bins);
    if (policy_.smem_bytes > 48 * 1024)
        CUDA_CHECK(cudaFuncSetAttribute(hist_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, policy_.smem_bytes));
}

MiPeak DeviceMiSearch::search(const DeviceImage& ref, const DeviceImage& mov, cudaStream_t s,
                              std::vector<double>* map, std::vector<std::uint32_t>* histograms) {
    const SearchWindow& w = params_.window;
    return search(ref, mov, {WindowCorner{w.x, w.y, w.z}}, s, map, histograms).front();
}

std::vector<MiPeak> DeviceMiSearch::search(const DeviceImage& ref, const DeviceImage& mov,
                                           const std::vector<WindowCorner>& corners, cudaStream_t s,
                                           std::vector<double>* map, std::vector<std::uint32_t>* histograms) {
    const MiSearchParams& p = params_;
    const int n = p.candidates();
    const int total = int(corners.size());
    const std::size_t bb = std::size_t(p.bins) * p.bins;
    const double pixels = double(p.window_pixels());
    const SearchWindow& w = p.window;
    if (map) map->resize(std::size_t(total) * n);
    if (histograms) histograms->assign(std::size_t(total) * n * bb, 0);
    DeviceBuffer<std::uint32_t> dump;
    if (histograms && policy_.strategy != "zero-slot") dump.reserve(std::size_t(total) * n * bb);

    corners_.reserve(corners.size());
    CUDA_CHECK(cudaMemcpyAsync(corners_.get(), corners.data(), corners.size() * sizeof(WindowCorner),
                               cudaMemcpyHostToDevice, s));
    const int per_launch = std::min(windows_per_launch_, total);
    mi_.reserve(std::size_t(per_launch) * n);
    peaks_.reserve(std::size_t(per_launch) * sizeof(DevicePeak));
    std::vector<DevicePeak> found(total);

    for (int first_window = 0; first_window < total; first_window += per_launch) {
        const int windows = std::min(per_launch, total - first_window);
        WindowArgs a{ref.data, mov.data, ref.pitch, ref.height, mov.pitch, mov.height, corners_.get() + first_window,
                     w.width, w.height, w.depth, p.max_shift.x, p.max_shift.y, p.max_shift.z, p.side_x(), p.side_y(),
                     n, p.bins, p.metric};
        const std::size_t first_candidate = std::size_t(first_window) * n;  // of the whole call
        if (policy_.strategy == "zero-slot") {
            const int count_all = windows * n;
            for (int first = 0; first < count_all; first += policy_.candidates_per_launch) {
                const int count = std::min(policy_.candidates_per_launch, count_all - first);
                CUDA_CHECK(cudaMemsetAsync(hist_.get(), 0, std::size_t(count) * bb * 4, s));
                hist_zero_slot<<<count, policy_.threads, policy_.smem_bytes, s>>>(a, first, hist_.get());
                CUDA_CHECK_LAUNCH("hist_zero_slot");
                if (histograms)
                    CUDA_CHECK(cudaMemcpyAsync(histograms->data() + (first_candidate + first) * bb, hist_.get(),
                                               std::size_t(count) * bb * 4, cudaMemcpyDeviceToHost, s));
                mi_from_global<<<count, 256, 0, s>>>(hist_.get(), p.bins, first, nlogn_.get(), pixels, p.metric, mi_.get());
                CUDA_CHECK_LAUNCH("mi_from_global");
            }
        } else {
            hist_shared<<<dim3(n, windows), policy_.threads, policy_.smem_bytes, s>>>(
                a, policy_.copies, policy_.row_stride, nlogn_.get(), pixels, mi_.get(),
                histograms ? dump.get() + first_candidate * bb : nullptr);
            CUDA_CHECK_LAUNCH("hist_shared");
        }
        DevicePeak* d_peaks = reinterpret_cast<DevicePeak*>(peaks_.get());
        find_peak<<<windows, 1024, 0, s>>>(mi_.get(), n, p.side_x(), p.side_y(), p.side_z(), p.max_shift, d_peaks);
        CUDA_CHECK_LAUNCH("find_peak");
        CUDA_CHECK(cudaMemcpyAsync(found.data() + first_window, d_peaks, windows * sizeof(DevicePeak),
                                   cudaMemcpyDeviceToHost, s));
        if (map)
            CUDA_CHECK(cudaMemcpyAsync(map->data() + first_candidate, mi_.get(), std::size_t(windows) * n * sizeof(double),
                                       cudaMemcpyDeviceToHost, s));
    }
    if (histograms && policy_.strategy != "zero-slot")
        CUDA_CHECK(cudaMemcpyAsync(histograms->data(), dump.get(), histograms->size() * 4, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));  // `found` and the copies are complete; `dump` may be freed

    std::vector<MiPeak> peaks(total);
    const ShiftRange& m = p.max_shift;
    for (int i = 0; i < total; ++i) {
        const DevicePeak& d = found[i];
        MiPeak& peak = peaks[i];
        peak.dx = d.best % p.side_x() - m.x;
        peak.dy = d.best / p.side_x() % p.side_y() - m.y;
        peak.dz = d.best / (p.side_x() * p.side_y()) - m.z;
        std::memcpy(peak.around, d.around, sizeof peak.around);
        std::memcpy(peak.around_z, d.around_z, sizeof peak.around_z);
        peak.mi = peak.around[1][1];
        peak.mean = d.mean;
        peak.stddev = d.stddev;
    }
    return peaks;
}

}  // namespace stackalign::cuda
