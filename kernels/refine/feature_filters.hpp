// The arithmetic of the refinement features (refine_features), written once
// for both twins: host and device compile this same text without FMA
// contraction, so the GPU's smoothed frames, B-spline coefficients and level
// maps equal the CPU's bit for bit.
#pragma once
#include <cmath>
#include <cstdint>

#include "../../src/core/host_device.hpp"
#include "refine.hpp"

namespace stackalign {

// ceil(3 kRefineSigma), as a constant expression: every smoothing up to
// kRefineSigma has the same taps' count (smaller ones reach further than
// 3 sigma), so sigma = kRefineSigma keeps its exact sums.
constexpr int kGaussianRadius = int(3.0f * kRefineSigma) + (float(int(3.0f * kRefineSigma)) < 3.0f * kRefineSigma);

// The Gaussian's taps for `sigma` (<= kRefineSigma), normalised in double, then rounded to float.
inline void gaussian_taps(float k[2 * kGaussianRadius + 1], float sigma) {
    double g[2 * kGaussianRadius + 1], sum = 0;
    const double s = sigma;
    for (int i = -kGaussianRadius; i <= kGaussianRadius; ++i)
        sum += g[i + kGaussianRadius] = std::exp(-0.5 * i * i / (s * s));
    for (int i = 0; i < 2 * kGaussianRadius + 1; ++i) k[i] = float(g[i] / sum);
}

// Sample i of a line of `len` samples (line[j * step]) smoothed by the
// taps, edges repeated; taps are added from -radius up.
STACKALIGN_HD inline float gaussian_sample(const float* line, long long step, int len, int i, const float* k) {
    float v = 0.0f;
    for (int t = -kGaussianRadius; t <= kGaussianRadius; ++t) {
        const int j = i + t < 0 ? 0 : i + t > len - 1 ? len - 1 : i + t;
        v += k[t + kGaussianRadius] * line[j * step];
    }
    return v;
}

// Unser's cubic B-spline prefilter pole, and how many samples its causal
// initialisation sums (to 1e-9); both made on the host for both twins.
inline double spline_pole() { return std::sqrt(3.0) - 2.0; }
inline int spline_horizon() { return 1 + int(std::ceil(std::log(1e-9) / std::log(std::fabs(spline_pole())))); }

// How many samples of a line prefilter_line reads before the recursion
// uses them. A GPU thread's line is otherwise a chain of memory round trips:
// the compiler cannot move a load above the previous step's store (`out` may
// be `line`), so each step waited a full latency.
constexpr int kLinePrefetch = 16;

// One line's B-spline coefficients (mirror boundaries): line[j * step] in,
// out[j * step] out (out may be line), through `c` (len doubles, c[i *
// c_step]). z is sqrt(3) - 2 as the host computes it. Each recursion
// carries its last value in a register and reads kLinePrefetch samples
// ahead; the arithmetic is Unser's, in his order.
STACKALIGN_HD inline void prefilter_line(const float* line, float* out, long long step, int len, double* c,
                                         long long c_step, double z, int horizon) {
    if (len < 2) return;
    double sum = 6.0 * line[0], zk = z;
    for (int i = 1; i < (len < horizon ? len : horizon); ++i, zk *= z) sum += zk * (6.0 * line[i * step]);
    double prev = sum;  // causal: c[i] = 6 line[i] + z c[i - 1]
    c[0] = prev;
    int i = 1;
    for (; i + kLinePrefetch <= len - 1; i += kLinePrefetch) {
        float v[kLinePrefetch];
        STACKALIGN_UNROLL
        for (int k = 0; k < kLinePrefetch; ++k) v[k] = line[(i + k) * step];
        STACKALIGN_UNROLL
        for (int k = 0; k < kLinePrefetch; ++k) c[(i + k) * c_step] = prev = 6.0 * v[k] + z * prev;
    }
    for (; i < len - 1; ++i) c[i * c_step] = prev = 6.0 * line[i * step] + z * prev;
    const double last = 6.0 * line[(len - 1) * step] + z * prev;
    prev = (z / (z * z - 1.0)) * (last + z * prev);  // anticausal, from the end
    out[(len - 1) * step] = float(prev);
    i = len - 2;
    for (; i + 1 >= kLinePrefetch; i -= kLinePrefetch) {
        double v[kLinePrefetch];
        STACKALIGN_UNROLL
        for (int k = 0; k < kLinePrefetch; ++k) v[k] = c[(i - k) * c_step];
        STACKALIGN_UNROLL
        for (int k = 0; k < kLinePrefetch; ++k) {
            prev = z * (prev - v[k]);
            out[(i - k) * step] = float(prev);
        }
    }
    for (; i >= 0; --i) {
        prev = z * (prev - c[i * c_step]);
        out[i * step] = float(prev);
    }
}

// A level map's knots: value v counts in knot interval min(int((v - lo)
// scale), kLevelKnots - 1), scale = level_scale(lo, hi).
inline float level_scale(float lo, float hi) { return float(kLevelKnots) / (hi - lo); }
STACKALIGN_HD inline int level_interval(float v, float lo, float scale) {
    const int i = int((v - lo) * scale);
    return i < kLevelKnots - 1 ? i : kLevelKnots - 1;
}
// The map of values lo..hi (hi > lo) from the counts per interval (`count`, kLevelKnots of them) of `n` values.
inline LevelMap level_map_from_counts(float lo, float hi, const std::uint64_t* count, std::uint64_t n) {
    LevelMap m;
    m.on = true;
    m.lo = lo;
    m.scale = level_scale(lo, hi);
    double below = 0;
    m.knots[0] = 0.0f;
    for (int k = 0; k < kLevelKnots; ++k) {
        below += double(count[k]);
        m.knots[k + 1] = float(below / double(n));
    }
    return m;
}

}  // namespace stackalign
