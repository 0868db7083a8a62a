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

// [1 2 1] x [1 2 1] weighted sum of the 3x3 values pjk (j, k = -1..1 -> 0..2).
STACKALIGN_HD inline float smooth3x3(float p00, float p01, float p02, float p10, float p11, float p12, float p20,
                                     float p21, float p22) {
    return (p00 + 2.0f * p01 + p02) + 2.0f * (p10 + 2.0f * p11 + p12) + (p20 + 2.0f * p21 + p22);
}

// The magnitude at a voxel from at(i, j, k), the value at offset (i - 1,
// j - 1, k - 1) from it (i, j, k = 0..2), edges repeated. Why an accessor:
// the CPU twin reads nine rows set once per row of voxels, with no clamp
// inside the row, and runs x along them on vector units, the same
// expressions lane by lane (always inlined: a call per voxel, or the
// values gathered into arrays, kept its loop scalar).
template <typename At>
STACKALIGN_HD STACKALIGN_INLINE float sobel3d_from(const At& at) {
    const float gx = smooth3x3(at(2, 0, 0), at(2, 0, 1), at(2, 0, 2), at(2, 1, 0), at(2, 1, 1), at(2, 1, 2), at(2, 2, 0),
                               at(2, 2, 1), at(2, 2, 2)) -
                     smooth3x3(at(0, 0, 0), at(0, 0, 1), at(0, 0, 2), at(0, 1, 0), at(0, 1, 1), at(0, 1, 2), at(0, 2, 0),
                               at(0, 2, 1), at(0, 2, 2));
    const float gy = smooth3x3(at(0, 2, 0), at(0, 2, 1), at(0, 2, 2), at(1, 2, 0), at(1, 2, 1), at(1, 2, 2), at(2, 2, 0),
                               at(2, 2, 1), at(2, 2, 2)) -
                     smooth3x3(at(0, 0, 0), at(0, 0, 1), at(0, 0, 2), at(1, 0, 0), at(1, 0, 1), at(1, 0, 2), at(2, 0, 0),
                               at(2, 0, 1), at(2, 0, 2));
    const float gz = smooth3x3(at(0, 0, 2), at(0, 1, 2), at(0, 2, 2), at(1, 0, 2), at(1, 1, 2), at(1, 2, 2), at(2, 0, 2),
                               at(2, 1, 2), at(2, 2, 2)) -
                     smooth3x3(at(0, 0, 0), at(0, 1, 0), at(0, 2, 0), at(1, 0, 0), at(1, 1, 0), at(1, 2, 0), at(2, 0, 0),
                               at(2, 1, 0), at(2, 2, 0));
    return sqrtf(gx * gx + gy * gy + gz * gz);
}

// The nine neighbour rows of row (y, z) of v (width x height x depth,
// z-major), edges repeated: r[j][k] is the row at (y + j - 1, z + k - 1).
STACKALIGN_HD inline void sobel3d_rows(const float* v, int w, int h, int d, int y, int z, const float* r[3][3]) {
    for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 3; ++k)
            r[j][k] = v + (static_cast<long long>(clamp_index(z + k - 1, d)) * h + clamp_index(y + j - 1, h)) * w;
}

// The magnitude at voxel (x, y, z) of v, every neighbour clamped.
STACKALIGN_HD inline float sobel3d_magnitude(const float* v, int w, int h, int d, int x, int y, int z) {
    const float* r[3][3];
    sobel3d_rows(v, w, h, d, y, z, r);
    const int xs[3] = {clamp_index(x - 1, w), x, clamp_index(x + 1, w)};
    return sobel3d_from([&](int i, int j, int k) { return r[j][k][xs[i]]; });
}

}  // namespace stackalign
