// The histogram strategies' kernels, one block per candidate window: thin
// wrappers over block_logic.cuh. Candidates of all windows of a launch are
// one sequence, window-major: g = window * candidates + cand, which is also
// where the score is stored. Included by mi_search_cuda.cu only.
#pragma once
#include "../mi_search_policy.cuh"
#include "block_logic.cuh"

namespace stackalign::cuda {

// Candidates of all windows of a launch are one sequence, window-major: g =
// window * candidates + cand, which is also where MI is stored.

// The design as specified: (0,0) pairs counted in per-thread shared slots,
// every other pair straight into the candidate's global histogram.
__global__ void __launch_bounds__(kGlobalThreads) hist_zero_slot(WindowArgs a, int first, std::uint32_t* __restrict__ hist) {
    extern __shared__ std::uint32_t slots[];
    const int g = first + blockIdx.x;
    const int bb = a.bins * a.bins;
    std::uint32_t* h = hist + std::size_t(blockIdx.x) * bb;
    slots[threadIdx.x] = 0;
    for_each_pair(a, g / a.candidates, g % a.candidates, [&](unsigned ra, unsigned mb) {
        if ((ra | mb) == 0) ++slots[threadIdx.x];
        else atomicAdd(&h[ra * a.bins + mb], 1u);
    });
    const std::uint32_t zeros = block_sum<kGlobalThreads>(slots[threadIdx.x]);
    if (threadIdx.x == 0) h[0] = zeros;  // no other pair maps to bin 0
}

__global__ void __launch_bounds__(kGlobalThreads)
mi_from_global(const std::uint32_t* __restrict__ hist, int bins, int first, const double* __restrict__ nlogn, double n,
               Metric metric, double* __restrict__ mi) {
    const double v = block_score<kGlobalThreads>(hist + std::size_t(blockIdx.x) * bins * bins, bins, bins, nlogn, n, metric);
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
    others = block_sum<kSharedThreads>(others);
    if (threadIdx.x == 0) h[0] = std::uint32_t((unsigned long long)(n) - others);
    __syncthreads();
    if (dump)
        for (int k = threadIdx.x; k < bb; k += blockDim.x) dump[g * bb + k] = h[(k / a.bins) * rs + k % a.bins];
    const double v = block_score<kSharedThreads>(h, a.bins, rs, nlogn, n, a.metric);
    if (threadIdx.x == 0) mi[g] = v;
}

// hist_shared's counting split among `gridDim.z` blocks per candidate, each
// over a band of the window's rows, adding its counts to the candidate's
// histogram in global memory (zeroed by the caller; its (0,0) bin gets the
// band's pixels less its other pairs). Block (cand, window, band). For a few
// candidates over a large window: a block per candidate left most SMs idle
// (search_bands).
__global__ void __launch_bounds__(kSharedThreads, 4)
hist_shared_band(WindowArgs a, int copies, int rs, std::uint32_t* __restrict__ hist) {
    extern __shared__ std::uint32_t h[];
    const std::size_t g = std::size_t(blockIdx.y) * a.candidates + blockIdx.x;
    const int hs = a.bins * rs, stride = copies > 1 ? hs + 1 : hs;
    for (int k = threadIdx.x; k < copies * stride; k += blockDim.x) h[k] = 0;
    __syncthreads();
    std::uint32_t* mine = h + (threadIdx.x % copies) * stride;
    const long long rows = (long long)a.wh * a.wd;
    const int first = int(rows * blockIdx.z / gridDim.z), end = int(rows * (blockIdx.z + 1) / gridDim.z);
    for_each_pair_in_rows(a, blockIdx.y, blockIdx.x, first, end, [&](unsigned ra, unsigned mb) {
        if ((ra | mb) != 0) atomicAdd(&mine[ra * rs + mb], 1u);
    });
    __syncthreads();
    std::uint32_t* out = hist + g * a.bins * a.bins;
    unsigned long long others = 0;
    for (int k = threadIdx.x; k < hs; k += blockDim.x) {
        if (k % rs >= a.bins) continue;  // the row's padding word
        std::uint32_t c = h[k];
        for (int r = 1; r < copies; ++r) c += h[r * stride + k];
        if (c) {
            atomicAdd(&out[(k / rs) * a.bins + k % rs], c);
            others += c;
        }
    }
    others = block_sum<kSharedThreads>(others);
    if (threadIdx.x == 0) atomicAdd(&out[0], std::uint32_t((unsigned long long)(end - first) * a.ww - others));
}

// The scores of hist_shared_band's histograms, as hist_shared scores its
// own (the same template and block size: the same sums in the same order).
__global__ void __launch_bounds__(kSharedThreads, 4)
mi_from_bands(const std::uint32_t* __restrict__ hist, int bins, const double* __restrict__ nlogn, double n, Metric metric,
              double* __restrict__ mi) {
    const double v = block_score<kSharedThreads>(hist + std::size_t(blockIdx.x) * bins * bins, bins, bins, nlogn, n, metric);
    if (threadIdx.x == 0) mi[blockIdx.x] = v;
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
        n = double(block_sum<kPartitionThreads>(mine));
    }
    if (dump)
        for (int k = t; k < bb; k += threads) dump[g * bb + k] = h[k];
    const double v = block_score<kPartitionThreads>(h, a.bins, a.bins, nlogn, n, a.metric);
    if (t == 0) mi[g] = v;
}

// Brosch & Tam's adaptive histogram (adaptive_histogram.hpp): a table gives
// each joint bin either "global" (~0u) or its first shared slot << 5 | its
// replica count - 1; lane bits pick the replica. Uncached bins are counted in
// the candidate's global histogram, which the block zeroes itself; at the
// end cached bins are merged into it, so MI is computed as for zero-slot.
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
    others = block_sum<kAdaptiveThreads>(others);
    if (threadIdx.x == 0) h[0] = std::uint32_t((unsigned long long)(n) - others);
}

}  // namespace stackalign::cuda
