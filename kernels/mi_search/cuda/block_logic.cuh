// Per-block device logic shared by the MI search kernels: which pixels a
// candidate compares, warp sums (CUB; a block's: block_reduce.cuh), and a
// candidate's score from its joint histogram. Included by mi_search_cuda.cu only.
#pragma once
#include <cub/warp/warp_reduce.cuh>

#include "../../block_reduce.cuh"
#include "window_args.cuh"

namespace stackalign::cuda {

// The sum of one warp's values, in its lane 0.
template <int THREADS, typename T>
__device__ T warp_sum(T v) {
    using Reduce = cub::WarpReduce<T>;
    __shared__ typename Reduce::TempStorage storage[THREADS / 32];
    const T r = Reduce(storage[threadIdx.x >> 5]).Sum(v);
    __syncwarp();  // the warp's storage may be used again at once
    return r;
}

// The shift of candidate `cand` (order as in mi_search.hpp).
struct CandidateShift {
    int x, y, z;
};
__device__ CandidateShift candidate_shift(const WindowArgs& a, int cand) {
    return {a.cx + a.step.x * (cand % a.side_x - a.mx), a.cy + a.step.y * (cand / a.side_x % a.side_y - a.my),
            a.cz + a.step.z * (cand / (a.side_x * a.side_y) - a.mz)};
}

// Visits every window pixel pair of candidate `cand` of window `win`: a warp
// walks a row, so loads of both images are contiguous across lanes; rows of
// all slices are one sequence, so a 2D window (wd = 1) costs nothing extra.
// A warp steps to its next row by pointer increments, never dividing: a 3D
// landmark window's rows are ~31 pixels, one pass of the lanes, so a
// division and a 64-bit address per row cost more than the row's pairs.
// Rows [first_row, end_row) of that sequence only: for_each_pair_in_rows.
template <typename F>
__device__ void for_each_pair_in_rows(const WindowArgs& a, int win, int cand, int first_row, int end_row, F&& f) {
    const WindowCorner c = a.corners[win];
    const auto [sx, sy, sz] = candidate_shift(a, cand);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int start = first_row + warp;
    int y = start % a.wh;
    const int z = start / a.wh, step_y = warps % a.wh, step_z = warps / a.wh;
    const std::uint8_t* r = a.ref + (std::size_t(c.z + z) * a.ref_height + c.y + y) * a.ref_pitch + c.x;
    const std::uint8_t* m = a.mov + (std::size_t(c.z + z + sz) * a.mov_height + c.y + y + sy) * a.mov_pitch + c.x + sx;
    const std::ptrdiff_t ref_slice = std::ptrdiff_t(a.ref_height) * a.ref_pitch, mov_slice = std::ptrdiff_t(a.mov_height) * a.mov_pitch;
    const std::ptrdiff_t ref_step = step_z * ref_slice + std::ptrdiff_t(step_y) * a.ref_pitch,
                         mov_step = step_z * mov_slice + std::ptrdiff_t(step_y) * a.mov_pitch;
    // Wrapping y past the window's last row: on to the next slice.
    const std::ptrdiff_t ref_wrap = ref_slice - std::ptrdiff_t(a.wh) * a.ref_pitch,
                         mov_wrap = mov_slice - std::ptrdiff_t(a.wh) * a.mov_pitch;
    for (int row = start; row < end_row; row += warps) {
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

// Every row.
template <typename F>
__device__ void for_each_pair(const WindowArgs& a, int win, int cand, F&& f) {
    for_each_pair_in_rows(a, win, cand, 0, a.wh * a.wd, f);
}

// NCC from the histogram: exact integer moments of the bin values, then the
// host's formula (ncc_from_moments).
template <int THREADS>
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
    n = block_sum<THREADS>(n);
    sa = block_sum<THREADS>(sa);
    sb = block_sum<THREADS>(sb);
    saa = block_sum<THREADS>(saa);
    sbb = block_sum<THREADS>(sbb);
    sab = block_sum<THREADS>(sab);
    return ncc_from_moments(n, sa, sb, saa, sbb, sab);
}

// CR from the histogram: warp 0 walks the reference bins in order, its lanes
// summing each row's moments, lane 0 adding them as the host does
// (cr_from_moments), so the two round identically. Valid in thread 0.
template <int THREADS>
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
        n = warp_sum<THREADS>(n);
        sum = warp_sum<THREADS>(sum);
        sq = warp_sum<THREADS>(sq);
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
template <int THREADS>
__device__ double block_score(const std::uint32_t* h, int bins, int stride, const double* __restrict__ nlogn, double n,
                              Metric metric) {
    if (metric == Metric::ncc) return block_ncc<THREADS>(h, bins, stride);
    if (metric == Metric::cr) return block_cr<THREADS>(h, bins, stride);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    double marginals = 0, joint = 0;
    for (int m = warp; m < 2 * bins; m += warps) {
        const bool is_row = m < bins;
        const int i = is_row ? m : m - bins;
        std::uint32_t sum = 0;
        for (int k = lane; k < bins; k += 32) sum += is_row ? h[i * stride + k] : h[k * stride + i];
        sum = warp_sum<THREADS>(sum);
        if (lane == 0) marginals += nlogn[sum];
    }
    for (int k = threadIdx.x; k < bins * bins; k += blockDim.x) {
        const std::uint32_t c = h[(k / bins) * stride + k % bins];
        if (c) joint += nlogn[c];
    }
    if (metric == Metric::mi) {
        // One reduction of the difference, as the MI search has always summed.
        const double total = block_sum<THREADS>(marginals - joint);
        return log(n) - total / n;
    }
    // NMI = (H(A) + H(B)) / H(A,B), as score_from_sums on the host.
    const double m_all = block_sum<THREADS>(marginals), j_all = block_sum<THREADS>(joint);
    if (n <= 0) return 1.0;
    const double h_joint = log(n) - j_all / n, h_sum = 2 * log(n) - m_all / n;
    return h_joint > 1e-12 ? h_sum / h_joint : 1.0;
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

}  // namespace stackalign::cuda
