// The winner of each window's search, chosen on the device with the CPU's
// tie rule, with what refinement and the pair checks need, so one copy
// brings back every window of a launch. Included by mi_search_cuda.cu only.
#pragma once
#include "../mi_search_policy.cuh"
#include "block_logic.cuh"

namespace stackalign::cuda {

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
// |sx|+|sy|+|sz| in pixels, then lowest index; mean and stddev over the
// sharpness lattice.
__global__ void __launch_bounds__(kPeakThreads) find_peak(const double* __restrict__ all_mi, int n, int side_x, int side_y, int side_z, ShiftRange m,
                          ShiftStep step, DevicePeak* __restrict__ peaks) {
    const double* mi = all_mi + std::size_t(blockIdx.x) * n;
    double best = -INFINITY, sum = 0, sum2 = 0;
    int lattice = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const double v = mi[i];
        best = fmax(best, v);
        const int kx = i % side_x - m.x, ky = i / side_x % side_y - m.y, kz = i / (side_x * side_y) - m.z;
        if (!on_sharpness_lattice(kx, m.x) || !on_sharpness_lattice(ky, m.y) || !on_sharpness_lattice(kz, m.z)) continue;
        sum += v;
        sum2 += v * v;
        ++lattice;
    }
    best = block_reduce<kPeakThreads>(best, Max{});
    sum = block_sum<kPeakThreads>(sum);
    sum2 = block_sum<kPeakThreads>(sum2);
    lattice = block_sum<kPeakThreads>(lattice);
    const double tol = 1e-9 * fmax(1.0, fabs(best));
    unsigned long long key = ~0ull;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        if (mi[i] < best - tol) continue;
        const int kx = i % side_x - m.x, ky = i / side_x % side_y - m.y, kz = i / (side_x * side_y) - m.z;
        const int l1 = abs(kx) * step.x + abs(ky) * step.y + abs(kz) * step.z;
        const unsigned long long k = (unsigned long long)(l1) << 32 | unsigned(i);
        key = k < key ? k : key;
    }
    key = block_reduce<kPeakThreads>(key, Min{});
    if (threadIdx.x != 0) return;
    DevicePeak& out = peaks[blockIdx.x];
    out.best = int(key & 0xffffffffu);
    out.mean = sum / lattice;
    out.stddev = sqrt(fmax(0.0, sum2 / lattice - out.mean * out.mean));
    const int x = out.best % side_x, y = out.best / side_x % side_y, z = out.best / (side_x * side_y);
    auto at = [&](int i, int j, int k) {
        const bool inside = i >= 0 && i < side_x && j >= 0 && j < side_y && k >= 0 && k < side_z;
        return inside ? mi[(std::size_t(k) * side_y + j) * side_x + i] : nan("");
    };
    for (int j = -1; j <= 1; ++j)
        for (int i = -1; i <= 1; ++i) out.around[j + 1][i + 1] = at(x + i, y + j, z);
    for (int k = -1; k <= 1; ++k) out.around_z[k + 1] = at(x, y, z + k);
}

}  // namespace stackalign::cuda
