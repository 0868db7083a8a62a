// A view stretched about its centre, sampled as both twins of
// view_correlation.hpp sample it: out(X) = in(S^-1 (X - c) + c), bilinear,
// clamped to the view.
#pragma once
#include <cmath>

#include "../../src/alignment/tilt_geometry.hpp"
#include "../../src/core/host_device.hpp"

namespace stackalign {

struct InverseStretch {
    double i11 = 1, i12 = 0, i21 = 0, i22 = 1;
};

inline InverseStretch inverse_of(const Stretch& s) {
    const double det = s.s[0] * s.s[3] - s.s[1] * s.s[2];
    return {s.s[3] / det, -s.s[1] / det, -s.s[2] / det, s.s[0] / det};
}

STACKALIGN_HD inline float stretched_at(const float* in, int w, int h, const InverseStretch& s, int x, int y) {
    const double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0;
    const double u = s.i11 * (x - cx) + s.i12 * (y - cy) + cx, v = s.i21 * (x - cx) + s.i22 * (y - cy) + cy;
    int x0 = int(floor(u)), y0 = int(floor(v));
    x0 = x0 < 0 ? 0 : x0 > w - 2 ? w - 2 : x0;
    y0 = y0 < 0 ? 0 : y0 > h - 2 ? h - 2 : y0;
    double fx = u - x0, fy = v - y0;
    fx = fx < 0 ? 0.0 : fx > 1 ? 1.0 : fx;
    fy = fy < 0 ? 0.0 : fy > 1 ? 1.0 : fy;
    const float* r0 = in + (long long)(y0) * w + x0;
    const float* r1 = r0 + w;
    return float((1 - fy) * ((1 - fx) * r0[0] + fx * r0[1]) + fy * ((1 - fx) * r1[0] + fx * r1[1]));
}

}  // namespace stackalign
