#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include <cub/device/device_radix_sort.cuh>

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


// The shift of candidate `cand` (order as in mi_search.hpp).
struct CandidateShift {
    int x, y, z;
};
__device__ CandidateShift candidate_shift(const WindowArgs& a, int cand) {
    return {cand % a.side_x - a.mx, cand / a.side_x % a.side_y - a.my, cand / (a.side_x * a.side_y) - a.mz};
}

// Visits every window pixel pair of candidate `cand` of window `win`: a warp
// walks a row, so loads of both images are contiguous across lanes; rows of
// all slices are one sequence, so a 2D window (wd = 1) costs nothing extra.
// A warp steps to its next row by pointer increments, never dividing: a 3D
// landmark window's rows are ~31 pixels, one pass of the lanes, so a
// division and a 64-bit address per row cost more than the row's pairs.
template <typename F>
__device__ void for_each_pair(const WindowArgs& a, int win, int cand, F&& f) {
    const WindowCorner c = a.corners[win];
    const auto [sx, sy, sz] = candidate_shift(a, cand);
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

// The sum of one warp's 64-bit values, in every lane.
__device__ unsigned long long warp_sum64(unsigned long long v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// NCC from the histogram: exact integer moments of the bin values, then the
// host's formula (ncc_from_moments).
__device__ double block_ncc(const std::uint32_t* h, int bins, int stride) {
    unsigned long long n = 0, sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    for (int k = threadIdx.x; k < bins * bins; k += blockDim.x) {
        const unsigned long long a = k / bins, b = k % bins, c = h[a * stride + b];
        n += c;
        sa += a * c;
        sb += b * c;
        saa += a * a * c;
        sbb += b * b * c;
        sab += a * b * c;
    }
    n = block_reduce(n, Sum{}, 0ull);
    sa = block_reduce(sa, Sum{}, 0ull);
    sb = block_reduce(sb, Sum{}, 0ull);
    saa = block_reduce(saa, Sum{}, 0ull);
    sbb = block_reduce(sbb, Sum{}, 0ull);
    sab = block_reduce(sab, Sum{}, 0ull);
    return ncc_from_moments(n, sa, sb, saa, sbb, sab);
}

// CR from the histogram: warp 0 walks the reference bins in order, its lanes
// summing each row's moments, lane 0 adding them as the host does
// (cr_from_moments), so the two round identically. Valid in thread 0.
__device__ double block_cr(const std::uint32_t* h, int bins, int stride) {
    if (threadIdx.x >= 32) return 0.0;
    CrAccumulator acc;
    for (int i = 0; i < bins; ++i) {
        unsigned long long n = 0, sum = 0, sq = 0;
        for (int b = threadIdx.x; b < bins; b += 32) {
            const unsigned long long c = h[i * stride + b];
            n += c;
            sum += b * c;
            sq += (unsigned long long)(b) * b * c;
        }
        n = warp_sum64(n);
        sum = warp_sum64(sum);
        sq = warp_sum64(sq);
        acc.add(n, sum, sq);
    }
    return acc.finish();
}

// The candidate's score from its joint histogram; for MI and NMI valid in
// every thread, for NCC and CR in thread 0 (the only one that stores it).
// MI = log N - (sum c log c over marginals - over joint) / N, as mi_from_histogram.
// Row r of the histogram starts at h + r * stride (stride >= bins: padded rows).
// Each marginal is summed by one warp, lanes along the row or down the
// column: with rows padded to bins + 1 words both walks hit 32 different
// banks. (One thread per marginal left 14 of 16 warps idle behind 2 x bins
// dependent loads; for a small 3D landmark window that tail cost about as
// much as filling the histogram.)
__device__ double block_score(const std::uint32_t* h, int bins, int stride, const double* __restrict__ nlogn, double n,
                              Metric metric) {
    if (metric == Metric::ncc) return block_ncc(h, bins, stride);
    if (metric == Metric::cr) return block_cr(h, bins, stride);
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
    const double v = block_score(hist + std::size_t(blockIdx.x) * bins * bins, bins, bins, nlogn, n, metric);
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
    const double v = block_score(h, a.bins, rs, nlogn, n, a.metric);
    if (threadIdx.x == 0) mi[g] = v;
}

// Where window pixel i (rows of all slices in order) lies in either image,
// moved by the candidate's shift in the moving one.
struct PixelAt {
    const std::uint8_t *ref, *mov;
};
__device__ PixelAt window_pixel(const WindowArgs& a, const WindowCorner& c, int sx, int sy, int sz, int i) {
    const int x = i % a.ww, row = i / a.ww, y = row % a.wh, z = row / a.wh;
    return {a.ref + (std::size_t(c.z + z) * a.ref_height + c.y + y) * a.ref_pitch + c.x + x,
            a.mov + (std::size_t(c.z + z + sz) * a.mov_height + c.y + y + sy) * a.mov_pitch + c.x + x + sx};
}

// Shams & Barnes' bin-partitioned histogram (mi_search.hpp). Thread t owns
// joint bins [lo, hi) of the block's histogram and is the only one to write
// them, so no atomics. Pixels are staged a tile of blockDim.x at a time as
// joint-bin indices; exact: every thread scans the whole tile (the reads are
// broadcasts); sampled: thread t scans only tile positions = t mod stride.
// With one block per candidate the block's partial histogram is the whole
// histogram, so there is nothing left to reduce across blocks.
__global__ void __launch_bounds__(kPartitionThreads)
hist_bin_partitioned(WindowArgs a, int stride, const double* __restrict__ nlogn, double* __restrict__ mi,
                     std::uint32_t* __restrict__ dump) {
    extern __shared__ std::uint32_t h[];
    const int bb = a.bins * a.bins, t = threadIdx.x, threads = blockDim.x;
    std::uint16_t* tile = reinterpret_cast<std::uint16_t*>(h + bb);
    const std::size_t g = std::size_t(blockIdx.y) * a.candidates + blockIdx.x;
    const auto [sx, sy, sz] = candidate_shift(a, blockIdx.x);
    const WindowCorner c = a.corners[blockIdx.y];
    const unsigned lo = unsigned((long long)(bb) * t / threads), span = unsigned((long long)(bb) * (t + 1) / threads) - lo;
    for (int k = t; k < bb; k += threads) h[k] = 0;
    const int pixels = a.ww * a.wh * a.wd;
    for (int base = 0; base < pixels; base += threads) {
        __syncthreads();  // the previous tile is scanned (and h zeroed)
        if (base + t < pixels) {
            const PixelAt p = window_pixel(a, c, sx, sy, sz, base + t);
            tile[t] = std::uint16_t(unsigned(__ldg(p.ref)) * a.bins + __ldg(p.mov));
        }
        __syncthreads();
        const int count = min(threads, pixels - base);
        for (int j = stride > 1 ? t % stride : 0; j < count; j += stride) {
            const unsigned b = tile[j];
            if (b - lo < span) ++h[b];
        }
    }
    __syncthreads();
    double n = double(pixels);
    if (stride > 1) {  // the sample's size
        unsigned long long mine = 0;
        for (unsigned k = lo; k < lo + span; ++k) mine += h[k];
        n = double(block_reduce(mine, Sum{}, 0ull));
    }
    if (dump)
        for (int k = t; k < bb; k += threads) dump[g * bb + k] = h[k];
    const double v = block_score(h, a.bins, a.bins, nlogn, n, a.metric);
    if (t == 0) mi[g] = v;
}

// Brosch & Tam's adaptive histogram (adaptive_histogram.hpp): a table gives
// each joint bin either "global" (~0u) or its first shared slot << 5 | its
// replica count - 1; lane bits pick the replica. Uncached bins are counted in
// the candidate's global histogram, which the block zeroes itself; at the
// end cached bins are merged into it, so MI is computed as for zero-slot.
constexpr int kAdaptiveThreads = 512;
__global__ void __launch_bounds__(kAdaptiveThreads)
hist_adaptive(WindowArgs a, int first, const std::uint32_t* __restrict__ table_in, int slots, double n,
              std::uint32_t* __restrict__ hist) {
    extern __shared__ std::uint32_t sm[];
    const int bb = a.bins * a.bins;
    std::uint32_t* table = sm;
    std::uint32_t* cache = sm + bb;
    const int g = first + blockIdx.x;
    std::uint32_t* h = hist + std::size_t(blockIdx.x) * bb;
    for (int k = threadIdx.x; k < bb; k += blockDim.x) {
        table[k] = table_in[k];
        h[k] = 0;
    }
    for (int k = threadIdx.x; k < slots; k += blockDim.x) cache[k] = 0;
    __syncthreads();
    const unsigned lane = threadIdx.x & 31;
    for_each_pair(a, g / a.candidates, g % a.candidates, [&](unsigned ra, unsigned mb) {
        if ((ra | mb) == 0) return;
        const unsigned b = ra * a.bins + mb, e = table[b];
        if (e == ~0u) atomicAdd(&h[b], 1u);
        else atomicAdd(&cache[(e >> 5) + (lane & e & 31u)], 1u);
    });
    __syncthreads();  // the block's global atomics are visible to the block
    unsigned long long others = 0;
    for (int k = threadIdx.x; k < bb; k += blockDim.x) {
        const std::uint32_t e = table[k];
        std::uint32_t c;
        if (e == ~0u) {
            c = __ldcg(h + k);  // from L2, where the atomics went
        } else {
            c = 0;
            for (std::uint32_t r = 0; r <= (e & 31u); ++r) c += cache[(e >> 5) + r];
            h[k] = c;
        }
        if (k) others += c;
    }
    others = block_reduce(others, Sum{}, 0ull);
    if (threadIdx.x == 0) h[0] = std::uint32_t((unsigned long long)(n) - others);
}

// ---- correlation ratio: Li & Kumar's presorted scheme and an atomic one ----

// Sort input for one window: key = reference bin, value = where the pixel is
// in the moving image relative to the moved window's first corner.
__global__ void cr_sort_input(WindowArgs a, int win, std::uint8_t* __restrict__ keys, int* __restrict__ offsets) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.ww * a.wh * a.wd) return;
    const WindowCorner c = a.corners[win];
    const PixelAt p = window_pixel(a, c, 0, 0, 0, i);
    keys[i] = *p.ref;
    offsets[i] = int(p.mov - window_pixel(a, c, 0, 0, 0, 0).mov);
}

// Each reference bin's run [begin, end) in the sorted keys (both zeroed first).
__global__ void cr_bin_runs(const std::uint8_t* __restrict__ keys, int n, int* __restrict__ begin, int* __restrict__ end) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int k = keys[i];
    if (i == 0 || keys[i - 1] != k) begin[k] = i;
    if (i == n - 1 || keys[i + 1] != k) end[k] = i + 1;
}

// Splits every bin's run into segments of at most `workload` pixels; the
// segments of bin i are first_segment[i] .. first_segment[i + 1] - 1.
__global__ void cr_segments(const int* __restrict__ begin, const int* __restrict__ end, int bins, int workload,
                            int2* __restrict__ segments, int* __restrict__ first_segment) {
    int s = 0;
    for (int i = 0; i < bins; ++i) {
        first_segment[i] = s;
        for (int j = begin[i]; j < end[i]; j += workload) segments[s++] = make_int2(j, min(end[i], j + workload));
    }
    first_segment[bins] = s;
}

// Block (segment, candidate): its pixels all have one reference bin, so sum
// and sum of squares of the moving values collect in registers and reduce in
// shared memory; no two blocks write the same word, no atomics. Blocks past
// the segment count (known only on the device) leave at once.
__global__ void cr_segment_sums(WindowArgs a, int win, int first_cand, const int* __restrict__ offsets,
                                const int2* __restrict__ segments, const int* __restrict__ first_segment,
                                int max_segments, ulonglong2* __restrict__ sums) {
    const int seg = blockIdx.x;
    if (seg >= first_segment[a.bins]) return;
    const auto [sx, sy, sz] = candidate_shift(a, first_cand + blockIdx.y);
    const WindowCorner c = a.corners[win];
    const std::uint8_t* base =
        a.mov + (std::size_t(c.z + sz) * a.mov_height + c.y + sy) * a.mov_pitch + c.x + sx;
    const int2 range = segments[seg];
    unsigned long long sum = 0, sq = 0;
    for (int j = range.x + threadIdx.x; j < range.y; j += blockDim.x) {
        const unsigned y = __ldg(base + offsets[j]);
        sum += y;
        sq += y * y;
    }
    sum = block_reduce(sum, Sum{}, 0ull);
    sq = block_reduce(sq, Sum{}, 0ull);
    if (threadIdx.x == 0) sums[std::size_t(blockIdx.y) * max_segments + seg] = make_ulonglong2(sum, sq);
}

// One thread per candidate: each bin's segments summed, bins added in order.
__global__ void cr_finish(const ulonglong2* __restrict__ sums, int max_segments, int candidates,
                          const int* __restrict__ begin, const int* __restrict__ end,
                          const int* __restrict__ first_segment, int bins, double* __restrict__ score,
                          BinMoments* __restrict__ dump) {
    const int cand = blockIdx.x * blockDim.x + threadIdx.x;
    if (cand >= candidates) return;
    const ulonglong2* mine = sums + std::size_t(cand) * max_segments;
    CrAccumulator acc;
    for (int i = 0; i < bins; ++i) {
        unsigned long long s = 0, q = 0;
        for (int k = first_segment[i]; k < first_segment[i + 1]; ++k) {
            s += mine[k].x;
            q += mine[k].y;
        }
        const unsigned long long n = (unsigned long long)(end[i] - begin[i]);
        acc.add(n, s, q);
        if (dump) dump[std::size_t(cand) * bins + i] = BinMoments{n, s, q};
    }
    score[cand] = acc.finish();
}

// The plain way, for comparison: per candidate, shared-memory atomics add
// each pixel's moving value into its reference bin's sums. Reference bin 0
// (the thresholded background, most pixels) is not counted but derived.
__global__ void cr_atomic(WindowArgs a, double n, double* __restrict__ score, BinMoments* __restrict__ dump) {
    extern __shared__ unsigned long long sums[];  // s[bins], q[bins], then 32-bit counts[bins]
    const int bins = a.bins;
    unsigned long long* s = sums;
    unsigned long long* q = sums + bins;
    std::uint32_t* count = reinterpret_cast<std::uint32_t*>(sums + 2 * bins);
    const std::size_t g = std::size_t(blockIdx.y) * a.candidates + blockIdx.x;
    for (int k = threadIdx.x; k < bins; k += blockDim.x) s[k] = q[k] = count[k] = 0;
    __syncthreads();
    for_each_pair(a, blockIdx.y, blockIdx.x, [&](unsigned ra, unsigned mb) {
        if (ra) atomicAdd(&count[ra], 1u);
        if (mb) {
            atomicAdd(&s[ra], (unsigned long long)(mb));
            atomicAdd(&q[ra], (unsigned long long)(mb * mb));
        }
    });
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned long long others = 0;
    for (int i = 1; i < bins; ++i) others += count[i];
    CrAccumulator acc;
    for (int i = 0; i < bins; ++i) {
        const unsigned long long ni = i ? count[i] : (unsigned long long)(n) - others;
        acc.add(ni, s[i], q[i]);
        if (dump) dump[g * bins + i] = BinMoments{ni, s[i], q[i]};
    }
    score[g] = acc.finish();
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
    if (workload) o << ", pixels/block: " << workload;
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

namespace {
bool fits_shared(const MiSearchParams& p, const std::string& strategy, std::size_t limit) {
    const std::size_t bb = std::size_t(p.bins) * p.bins, padded = padded_words(p.bins) * 4;
    if (strategy == "shared") return padded <= limit;
    if (strategy == "replicated") return 2 * (padded + 4) <= limit;
    // The table and at least 1024 cache slots.
    if (strategy == "adaptive") return (bb + 1024) * 4 <= limit;
    if (strategy == "bin-partitioned") return bb * 4 + kPartitionThreads * 2 <= limit;
    return true;
}
}  // namespace

std::vector<std::string> available_strategies(const MiSearchParams& p, int gpu) {
    const std::size_t limit = smem_optin(gpu);
    std::vector<std::string> s;
    if (p.sample_stride > 1) {
        if (fits_shared(p, "bin-partitioned", limit)) s.push_back("bin-partitioned");
        return s;
    }
    // In the order `make bench-gpu` ranked them on an H100 (docs/benchmarks.md);
    // "auto" times them on the first pair of a run (pair_searcher_cuda.cu).
    std::vector<std::string> all = {"shared", "replicated", "zero-slot", "adaptive", "bin-partitioned"};
    if (p.metric == Metric::cr) all.insert(all.begin(), {"presorted", "cr-atomic"});
    for (const std::string& name : all)
        if (fits_shared(p, name, limit)) s.push_back(name);
    return s;
}

std::vector<std::string> auto_strategies(const MiSearchParams& p, int gpu) {
    std::vector<std::string> s = available_strategies(p, gpu);
    if (p.sample_stride == 1) s.erase(std::remove(s.begin(), s.end(), "bin-partitioned"), s.end());
    return s;
}

HistogramPolicy choose_policy(const MiSearchParams& p, const std::string& requested, int gpu) {
    HistogramPolicy policy;
    std::string name = requested;
    if (name.rfind("presorted:", 0) == 0) {
        policy.workload = std::atoi(name.c_str() + 10);
        if (policy.workload < 1) throw InternalError("bad presorted workload in \"" + requested + "\"");
        name = "presorted";
    }
    const bool cr_only = name == "presorted" || name == "cr-atomic";
    if (cr_only && p.metric != Metric::cr)
        throw UnsupportedError("histogram strategy \"" + name + "\" computes the correlation ratio only; it needs "
                               "[search] metric = \"cr\" (the metric is \"" + to_string(p.metric) + "\")");
    if (p.sample_stride > 1 && name != "auto" && name != "bin-partitioned")
        throw UnsupportedError("sampled histograms are made by the bin-partitioned strategy only, not \"" + name + "\"");
    const std::vector<std::string> ok = available_strategies(p, gpu);
    if (ok.empty())
        throw UnsupportedError("the sampled bin-partitioned histogram of " + std::to_string(p.bins) +
                               " bins does not fit in this GPU's shared memory; use fewer bins");
    policy.strategy = name == "auto" ? ok.front() : name;
    if (std::find(ok.begin(), ok.end(), policy.strategy) == ok.end())
        throw UnsupportedError("histogram strategy \"" + requested + "\" cannot run " + std::to_string(p.bins) +
                               " bins on this GPU (a " + std::to_string(p.bins) + "x" + std::to_string(p.bins) +
                               " histogram does not fit in shared memory); use \"zero-slot\" or \"auto\"");
    const std::size_t bb = std::size_t(p.bins) * p.bins;
    const std::size_t limit = smem_optin(gpu);
    // Global histograms in chunks of at most 256 MiB.
    const int global_chunk =
        int(std::max<std::size_t>(1, std::min<std::size_t>(p.candidates(), (std::size_t(256) << 20) / (bb * 4))));
    const std::string& st = policy.strategy;
    if (st == "shared" || st == "replicated") {
        policy.threads = kSharedThreads;
        policy.row_stride = p.bins + 1;
        const std::size_t hs = padded_words(p.bins);
        policy.copies = 1;
        if (st == "replicated") {
            // As many replicas as leave room for two blocks per SM, at most 8.
            policy.copies = 8;
            while (policy.copies > 2 && std::size_t(policy.copies) * (hs + 1) * 4 * 2 > limit) policy.copies /= 2;
        }
        policy.smem_bytes = int(std::size_t(policy.copies) * (policy.copies > 1 ? hs + 1 : hs) * 4);
    } else if (st == "adaptive") {
        policy.threads = kAdaptiveThreads;
        // Room for four blocks per SM if the table leaves some, else two, else one.
        std::size_t budget = limit / 4;
        if ((bb + 1024) * 4 > budget) budget = limit / 2;
        if ((bb + 1024) * 4 > budget) budget = limit;
        policy.adaptive_capacity = int(budget / 4 - bb);
        policy.smem_bytes = int(budget);
        policy.candidates_per_launch = global_chunk;
    } else if (st == "bin-partitioned") {
        policy.threads = kPartitionThreads;
        policy.smem_bytes = int(bb * 4 + kPartitionThreads * 2);
    } else if (st == "presorted") {
        policy.threads = 256;
        // Li & Kumar found 768 pixels per block best on their GPU; on an H100
        // 2048 was fastest of 256..2048 (`bench methods`, docs/benchmarks.md).
        if (!policy.workload) policy.workload = 2048;
    } else if (st == "cr-atomic") {
        policy.threads = 256;
        policy.smem_bytes = p.bins * (8 + 8 + 4);
    } else {
        policy.threads = 256;
        policy.smem_bytes = policy.threads * 4;
        policy.candidates_per_launch = global_chunk;
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
    const std::string& st = policy_.strategy;
    const std::size_t bb = std::size_t(p.bins) * p.bins;
    if (st == "zero-slot" || st == "adaptive") hist_.reserve(std::size_t(policy_.candidates_per_launch) * bb);
    if (st == "adaptive") table_.reserve(bb);
    if (st == "presorted") {
        const std::size_t pixels = std::size_t(p.window_pixels());
        keys_.reserve(pixels);
        sorted_keys_.reserve(pixels);
        offsets_.reserve(pixels);
        sorted_offsets_.reserve(pixels);
        runs_.reserve(2 * std::size_t(p.bins));
        first_segment_.reserve(p.bins + 1);
        max_segments_ = int(pixels / policy_.workload + p.bins);
        segments_.reserve(max_segments_);
        // Segment sums of at most 64 MiB of candidates per launch.
        cr_candidates_per_launch_ = int(std::clamp<std::size_t>(
            (std::size_t(64) << 20) / (sizeof(ulonglong2) * max_segments_), 1, std::min(p.candidates(), 65535)));
        segment_sums_.reserve(std::size_t(cr_candidates_per_launch_) * max_segments_);
        std::size_t scratch = 0;
        CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, scratch, keys_.get(), sorted_keys_.get(), offsets_.get(),
                                                   sorted_offsets_.get(), int(pixels)));
        sort_scratch_.reserve(std::max<std::size_t>(scratch, 1));
    }
    auto allow = [&](auto kernel) {
        if (policy_.smem_bytes > 48 * 1024)
            CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, policy_.smem_bytes));
    };
    if (st == "shared" || st == "replicated") allow(hist_shared);
    if (st == "adaptive") allow(hist_adaptive);
    if (st == "bin-partitioned") allow(hist_bin_partitioned);
}

WindowArgs DeviceMiSearch::window_args(const DeviceImage& ref, const DeviceImage& mov,
                                       const WindowCorner* corners) const {
    const MiSearchParams& p = params_;
    const SearchWindow& w = p.window;
    return {ref.data, mov.data, ref.pitch, ref.height, mov.pitch, mov.height, corners, w.width, w.height, w.depth,
            p.max_shift.x, p.max_shift.y, p.max_shift.z, p.side_x(), p.side_y(), p.candidates(), p.bins, p.metric};
}

void DeviceMiSearch::adapt(const DeviceImage& ref, const DeviceImage& mov, cudaStream_t s) {
    const MiSearchParams& p = params_;
    const int bb = p.bins * p.bins;
    const int centre = (p.max_shift.z * p.side_y() + p.max_shift.y) * p.side_x() + p.max_shift.x;
    const WindowArgs a = window_args(ref, mov, corners_.get());
    CUDA_CHECK(cudaMemsetAsync(hist_.get(), 0, std::size_t(bb) * 4, s));
    hist_zero_slot<<<1, 256, 256 * 4, s>>>(a, centre, hist_.get());
    CUDA_CHECK_LAUNCH("hist_zero_slot (adaptive probe)");
    std::vector<std::uint32_t> first(bb);
    CUDA_CHECK(cudaMemcpyAsync(first.data(), hist_.get(), std::size_t(bb) * 4, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    ++searches_;
    // Re-optimised when a quarter of the histogram's mass has moved.
    if (!adaptive_.level.empty() && histogram_drift(adaptive_, first.data(), p.bins) < 0.25) return;
    adaptive_ = optimise_adaptive(first.data(), p.bins, policy_.adaptive_capacity);
    ++optimisations_;
    std::vector<std::uint32_t> table(bb, ~0u);
    for (int b = 0; b < bb; ++b)
        if (adaptive_.level[b]) table[b] = std::uint32_t(adaptive_.offset[b]) << 5 | std::uint32_t(adaptive_.replicas(b) - 1);
    CUDA_CHECK(cudaMemcpyAsync(table_.get(), table.data(), std::size_t(bb) * 4, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaStreamSynchronize(s));  // `table` is freed on return
}

std::string DeviceMiSearch::adaptive_summary() const {
    if (adaptive_.level.empty()) return {};
    int cached = 0, replicated = 0;
    for (std::size_t b = 0; b < adaptive_.level.size(); ++b) {
        cached += adaptive_.level[b] > 0;
        replicated += adaptive_.level[b] > 1;
    }
    std::ostringstream o;
    o << "adaptive: " << cached << " bins cached (" << replicated << " replicated) in " << adaptive_.slots
      << " shared slots; expected cost " << adaptive_.expected_cost << " vs " << adaptive_.global_cost
      << " all-global per warp step; configured " << optimisations_ << " time(s) in " << searches_ << " search(es)";
    return o.str();
}

void DeviceMiSearch::presorted_cr(const WindowArgs& a, int win, std::size_t offset, cudaStream_t s, BinMoments* dump) {
    const MiSearchParams& p = params_;
    const int pixels = int(p.window_pixels()), n = p.candidates();
    // Once per window: sort its pixels by reference bin and cut the runs into segments.
    cr_sort_input<<<(pixels + 255) / 256, 256, 0, s>>>(a, win, keys_.get(), offsets_.get());
    CUDA_CHECK_LAUNCH("cr_sort_input");
    std::size_t scratch = sort_scratch_.size();
    const int bits = std::max(1, int(std::ceil(std::log2(double(p.bins)))));
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_scratch_.get(), scratch, keys_.get(), sorted_keys_.get(),
                                               offsets_.get(), sorted_offsets_.get(), pixels, 0, bits, s));
    int* begin = runs_.get();
    int* end = runs_.get() + p.bins;
    CUDA_CHECK(cudaMemsetAsync(runs_.get(), 0, 2 * std::size_t(p.bins) * sizeof(int), s));
    cr_bin_runs<<<(pixels + 255) / 256, 256, 0, s>>>(sorted_keys_.get(), pixels, begin, end);
    CUDA_CHECK_LAUNCH("cr_bin_runs");
    cr_segments<<<1, 1, 0, s>>>(begin, end, p.bins, policy_.workload, segments_.get(), first_segment_.get());
    CUDA_CHECK_LAUNCH("cr_segments");
    // Every candidate reuses the sort.
    for (int first = 0; first < n; first += cr_candidates_per_launch_) {
        const int count = std::min(cr_candidates_per_launch_, n - first);
        cr_segment_sums<<<dim3(max_segments_, count), policy_.threads, 0, s>>>(
            a, win, first, sorted_offsets_.get(), segments_.get(), first_segment_.get(), max_segments_,
            segment_sums_.get());
        CUDA_CHECK_LAUNCH("cr_segment_sums");
        cr_finish<<<(count + 127) / 128, 128, 0, s>>>(segment_sums_.get(), max_segments_, count, begin, end,
                                                       first_segment_.get(), p.bins, mi_.get() + offset + first,
                                                       dump ? dump + std::size_t(first) * p.bins : nullptr);
        CUDA_CHECK_LAUNCH("cr_finish");
    }
}

MiPeak DeviceMiSearch::search(const DeviceImage& ref, const DeviceImage& mov, cudaStream_t s,
                              std::vector<double>* map, std::vector<std::uint32_t>* histograms,
                              std::vector<BinMoments>* moments) {
    const SearchWindow& w = params_.window;
    return search(ref, mov, {WindowCorner{w.x, w.y, w.z}}, s, map, histograms, moments).front();
}

std::vector<MiPeak> DeviceMiSearch::search(const DeviceImage& ref, const DeviceImage& mov,
                                           const std::vector<WindowCorner>& corners, cudaStream_t s,
                                           std::vector<double>* map, std::vector<std::uint32_t>* histograms,
                                           std::vector<BinMoments>* moments) {
    const MiSearchParams& p = params_;
    const std::string& st = policy_.strategy;
    const bool cr_only = st == "presorted" || st == "cr-atomic";
    const bool global_histograms = st == "zero-slot" || st == "adaptive";
    if (cr_only && histograms) throw InternalError("the " + st + " strategy makes no joint histograms");
    if (!cr_only && moments) throw InternalError("only the CR strategies keep per-bin moments");
    const int n = p.candidates();
    const int total = int(corners.size());
    const std::size_t bb = std::size_t(p.bins) * p.bins;
    const double pixels = double(p.window_pixels());
    if (map) map->resize(std::size_t(total) * n);
    if (histograms) histograms->assign(std::size_t(total) * n * bb, 0);
    DeviceBuffer<std::uint32_t> dump;
    if (histograms && !global_histograms) dump.reserve(std::size_t(total) * n * bb);
    DeviceBuffer<BinMoments> moment_dump;
    if (moments) moment_dump.reserve(std::size_t(total) * n * p.bins);

    corners_.reserve(corners.size());
    CUDA_CHECK(cudaMemcpyAsync(corners_.get(), corners.data(), corners.size() * sizeof(WindowCorner),
                               cudaMemcpyHostToDevice, s));
    const int per_launch = std::min(windows_per_launch_, total);
    mi_.reserve(std::size_t(per_launch) * n);
    peaks_.reserve(std::size_t(per_launch) * sizeof(DevicePeak));
    std::vector<DevicePeak> found(total);
    if (st == "adaptive") adapt(ref, mov, s);

    for (int first_window = 0; first_window < total; first_window += per_launch) {
        const int windows = std::min(per_launch, total - first_window);
        const WindowArgs a = window_args(ref, mov, corners_.get() + first_window);
        const std::size_t first_candidate = std::size_t(first_window) * n;  // of the whole call
        std::uint32_t* hist_dump = histograms && !global_histograms ? dump.get() + first_candidate * bb : nullptr;
        BinMoments* moment_out = moments ? moment_dump.get() + first_candidate * p.bins : nullptr;
        if (global_histograms) {
            const int count_all = windows * n;
            for (int first = 0; first < count_all; first += policy_.candidates_per_launch) {
                const int count = std::min(policy_.candidates_per_launch, count_all - first);
                if (st == "zero-slot") {
                    CUDA_CHECK(cudaMemsetAsync(hist_.get(), 0, std::size_t(count) * bb * 4, s));
                    hist_zero_slot<<<count, policy_.threads, policy_.smem_bytes, s>>>(a, first, hist_.get());
                    CUDA_CHECK_LAUNCH("hist_zero_slot");
                } else {
                    const int smem = int((bb + adaptive_.slots) * 4);
                    hist_adaptive<<<count, policy_.threads, smem, s>>>(a, first, table_.get(), adaptive_.slots, pixels,
                                                                        hist_.get());
                    CUDA_CHECK_LAUNCH("hist_adaptive");
                }
                if (histograms)
                    CUDA_CHECK(cudaMemcpyAsync(histograms->data() + (first_candidate + first) * bb, hist_.get(),
                                               std::size_t(count) * bb * 4, cudaMemcpyDeviceToHost, s));
                mi_from_global<<<count, 256, 0, s>>>(hist_.get(), p.bins, first, nlogn_.get(), pixels, p.metric, mi_.get());
                CUDA_CHECK_LAUNCH("mi_from_global");
            }
        } else if (st == "bin-partitioned") {
            hist_bin_partitioned<<<dim3(n, windows), policy_.threads, policy_.smem_bytes, s>>>(
                a, p.sample_stride, nlogn_.get(), mi_.get(), hist_dump);
            CUDA_CHECK_LAUNCH("hist_bin_partitioned");
        } else if (st == "cr-atomic") {
            cr_atomic<<<dim3(n, windows), policy_.threads, policy_.smem_bytes, s>>>(a, pixels, mi_.get(), moment_out);
            CUDA_CHECK_LAUNCH("cr_atomic");
        } else if (st == "presorted") {
            for (int win = 0; win < windows; ++win)
                presorted_cr(a, win, std::size_t(win) * n, s, moment_out ? moment_out + std::size_t(win) * n * p.bins : nullptr);
        } else {
            hist_shared<<<dim3(n, windows), policy_.threads, policy_.smem_bytes, s>>>(
                a, policy_.copies, policy_.row_stride, nlogn_.get(), pixels, mi_.get(), hist_dump);
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
    if (histograms && !global_histograms)
        CUDA_CHECK(cudaMemcpyAsync(histograms->data(), dump.get(), histograms->size() * 4, cudaMemcpyDeviceToHost, s));
    if (moments) {
        moments->resize(std::size_t(total) * n * p.bins);
        CUDA_CHECK(cudaMemcpyAsync(moments->data(), moment_dump.get(), moments->size() * sizeof(BinMoments),
                                   cudaMemcpyDeviceToHost, s));
    }
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
