// 3D Sobel magnitude at one voxel, shared verbatim by the CPU and CUDA twins
// so both evaluate the same float expressions in the same order (and, built
// without FMA contraction, round identically). The kernels are the separable
// 3x3x3 Sobel-Feldman ones: [-1 0 1] along the derivative's axis, [1 2 1] x
// [1 2 1] across it; borders replicate the edge voxel.
#pragma once
#include <math.h>

#include "../../src/core/host_device.hpp"

namespace stackalign {

STACKALIGN_HD inline int clamp_index(int i, int n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

// [1 2 1] x [1 2 1] weighted sum of the 3x3 values p[j][k] (j, k = -1..1 -> 0..2).
STACKALIGN_HD inline float smooth3x3(const float p[3][3]) {
    return (p[0][0] + 2.0f * p[0][1] + p[0][2]) + 2.0f * (p[1][0] + 2.0f * p[1][1] + p[1][2]) +
           (p[2][0] + 2.0f * p[2][1] + p[2][2]);
}

// v: width x height x depth, z-major.
STACKALIGN_HD inline float sobel3d_magnitude(const float* v, int w, int h, int d, int x, int y, int z) {
    const int xs[3] = {clamp_index(x - 1, w), x, clamp_index(x + 1, w)};
    const int ys[3] = {clamp_index(y - 1, h), y, clamp_index(y + 1, h)};
    const int zs[3] = {clamp_index(z - 1, d), z, clamp_index(z + 1, d)};
    auto at = [&](int i, int j, int k) { return v[(static_cast<long long>(zs[k]) * h + ys[j]) * w + xs[i]]; };
    float lo[3][3], hi[3][3];
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            lo[a][b] = at(0, a, b);
            hi[a][b] = at(2, a, b);
        }
    const float gx = smooth3x3(hi) - smooth3x3(lo);
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            lo[a][b] = at(a, 0, b);
            hi[a][b] = at(a, 2, b);
        }
    const float gy = smooth3x3(hi) - smooth3x3(lo);
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            lo[a][b] = at(a, b, 0);
            hi[a][b] = at(a, b, 2);
        }
    const float gz = smooth3x3(hi) - smooth3x3(lo);
    return sqrtf(gx * gx + gy * gy + gz * gz);
}

}  // namespace stackalign
