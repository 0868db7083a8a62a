// The correlation ratio's kernels: Li & Kumar's presorted scheme (the
// reference window's pixels sorted by bin once, every candidate summing each
// bin's run in registers) and the plain atomic one, for comparison.
// Included by mi_search_cuda.cu only.
#pragma once
#include "../mi_search_policy.cuh"
#include "block_logic.cuh"

namespace stackalign::cuda {


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

// Each reference bin's run in the sorted keys, from CUB's run-length
// encoding: length[bin] (zeroed first) for the bins that occur.
__global__ void cr_scatter_runs(const std::uint8_t* __restrict__ unique, const int* __restrict__ run_lengths,
                                const int* __restrict__ runs, int* __restrict__ length) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < *runs) length[unique[r]] = run_lengths[r];
}

// Segments per bin: its run cut into pieces of at most `workload` pixels;
// count[bins] = 0 so that the exclusive scan's last element is the total.
__global__ void cr_segment_counts(const int* __restrict__ length, int bins, int workload, int* __restrict__ count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= bins) count[i] = i < bins ? (length[i] + workload - 1) / workload : 0;
}

// The segments of bin i are first_segment[i] .. first_segment[i + 1] - 1,
// in order along the bin's run [begin, end).
__global__ void cr_write_segments(const int* __restrict__ begin, const int* __restrict__ length, int bins, int workload,
                                  const int* __restrict__ first_segment, int2* __restrict__ segments,
                                  int* __restrict__ end) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= bins) return;
    end[i] = begin[i] + length[i];
    int s = first_segment[i];
    for (int j = begin[i]; j < end[i]; j += workload) segments[s++] = make_int2(j, min(end[i], j + workload));
}

// Block (segment, candidate): its pixels all have one reference bin, so sum
// and sum of squares of the moving values collect in registers and reduce in
// shared memory; no two blocks write the same word, no atomics. Blocks past
// the segment count (known only on the device) leave at once.
__global__ void __launch_bounds__(kCrThreads) cr_segment_sums(WindowArgs a, int win, int first_cand, const int* __restrict__ offsets,
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
    sum = block_sum<kCrThreads>(sum);
    sq = block_sum<kCrThreads>(sq);
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

}  // namespace stackalign::cuda
