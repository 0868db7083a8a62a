// What one pixel adds to NCC's continuous refinement, written once for both
// twins (as parzen.hpp is for the histograms): the pair's values go into
// fixed-point moments, so sums made in any order, on either backend, are the
// same integers and score the same.
//
// Why NCC is scored from pixel moments and not from the Parzen histogram:
// the histogram bins each frame by its own distribution (LevelMap) and
// keeps only bin indices, which suits MI and throws away what NCC measures,
// the linear relation of the values. On frames of one contrast with noise
// (the case NCC and ECC are made for) the values themselves are the better
// estimate: on bench/rigid_peers.py's cases (3 seeds of 25 frames) the rigid
// angle error went from 0.0060 to 0.0020 and from 0.0123 to 0.0076 deg
// (docs/benchmarks.md, Rotation).
#pragma once
#include <cmath>
#include <cstdint>

#include "parzen.hpp"

namespace stackalign {

// Fixed point: values in 1/4096 of a grey level (the features are on a
// 0..255 scale, edges up to about 1.5k), clamped to +-2^12 grey levels, so a
// product needs 2^48 before its shift back by 12 bits and a sum of 2^26
// pixels stays inside int64.
constexpr int kMomentBits = 12;
constexpr float kMomentLimit = 4096.0f;
constexpr int kMomentCount = 6;  // n, sum a, sum b, sum a^2, sum b^2, sum ab

struct PairMoments {
    long long m[kMomentCount] = {};
    STACKALIGN_HD static long long fixed(float v) {
        v = v < -kMomentLimit ? -kMomentLimit : v > kMomentLimit ? kMomentLimit : v;
        return static_cast<long long>(floorf(v * float(1 << kMomentBits) + 0.5f));
    }
    STACKALIGN_HD void add(float a, float b) {
        const long long qa = fixed(a), qb = fixed(b);
        m[0] += 1;
        m[1] += qa;
        m[2] += qb;
        m[3] += (qa * qa) >> kMomentBits;
        m[4] += (qb * qb) >> kMomentBits;
        m[5] += (qa * qb) >> kMomentBits;
    }
};

// A reference pixel's value for NCC: its smoothed intensity (or edge)
// before any level map, read back from the B-spline coefficients at the
// pixel itself (the features keep the levelled values for MI). The moving
// values come from the same spline, so both sides are one kind of sample.
STACKALIGN_HD inline float reference_value(const float* coefficients, const RefineImage& g, int x, int y, int z) {
    ShiftTaps at{};
    for (int a = 0; a < 3; ++a) bspline_weights(0.0f, at.w[a]);
    return interpolate(coefficients, g, x, y, z, at);
}

// Pearson's correlation from the moments (as stored: two's complement in
// unsigned words); 0 when either side is constant.
inline double ncc_of_moments(const std::uint64_t* s) {
    const double n = double(static_cast<long long>(s[0]));
    if (n <= 0) return 0.0;
    const double unit = double(1 << kMomentBits);
    const double ma = double(static_cast<long long>(s[1])) / unit / n, mb = double(static_cast<long long>(s[2])) / unit / n;
    const double va = double(static_cast<long long>(s[3])) / unit / n - ma * ma;
    const double vb = double(static_cast<long long>(s[4])) / unit / n - mb * mb;
    const double cov = double(static_cast<long long>(s[5])) / unit / n - ma * mb;
    return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0.0;
}

}  // namespace stackalign
