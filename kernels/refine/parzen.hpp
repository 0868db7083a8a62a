// What one pixel adds to a Parzen joint histogram at one continuous shift,
// written once for both twins (host and device compile this same text, no
// FMA contraction on either), so their fixed-point histograms are identical.
#pragma once
#include <cmath>
#include <cstdint>

#include "refine.hpp"

namespace stackalign {

// One shift's interpolation taps, the same for every pixel: the moving
// sample for reference pixel x sits at x + base[axis] + (-1..2), weighted by
// w[axis][0..3]. Made on the host from the double shift, for both twins.
struct ShiftTaps {
    int base[3];
    float w[3][4];
};
inline ShiftTaps shift_taps(const ContinuousShift& s) {
    ShiftTaps t{};
    const double v[3] = {s.x, s.y, s.z};
    for (int a = 0; a < 3; ++a) {
        const double f = std::floor(v[a]);
        t.base[a] = int(f);
        bspline_weights(float(v[a] - f), t.w[a]);
    }
    return t;
}

// The image geometry a kernel needs: sizes of the moving coefficient image
// (indices are clamped to it: a sample past its edge repeats the edge).
struct RefineImage {
    int width, height, depth;
};

STACKALIGN_HD inline int clamp_index(int i, int n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

// Cubic B-spline interpolation of the coefficients at pixel (x, y, z) +
// the shift; 2D images (depth 1) take one z tap of weight 1.
STACKALIGN_HD inline float interpolate(const float* c, const RefineImage& g, int x, int y, int z, const ShiftTaps& t) {
    const bool volume = g.depth > 1;
    float sum = 0.0f;
    for (int k = 0; k < (volume ? 4 : 1); ++k) {
        const int zz = volume ? clamp_index(z + t.base[2] - 1 + k, g.depth) : 0;
        float plane = 0.0f;
        for (int j = 0; j < 4; ++j) {
            const int yy = clamp_index(y + t.base[1] - 1 + j, g.height);
            const float* row = c + (static_cast<long long>(zz) * g.height + yy) * g.width;
            float line = 0.0f;
            for (int i = 0; i < 4; ++i) line += row[clamp_index(x + t.base[0] - 1 + i, g.width)] * t.w[0][i];
            plane += line * t.w[1][j];
        }
        sum += volume ? plane * t.w[2][k] : plane;
    }
    return sum;
}

// Where a reference value falls on the Parzen axis: its first bin and four
// weights. It is the same at every shift, so a backend may place each
// reference pixel once per batch of shifts.
struct ParzenPlace {
    int bin;
    float w[4];
};
STACKALIGN_HD inline ParzenPlace place_reference(float a, const RefineParams& p) {
    ParzenPlace r;
    r.bin = parzen_place(a, p.ref_lo, p.ref_scale, p.bins, r.w);
    return r;
}

// One of a pixel's 16 weights in fixed point. A product of two B-spline
// weights is at most 4/9, so the conversion goes through int32, which
// vector units have (the CPU twin converts 4-8 at a time).
STACKALIGN_HD inline std::uint32_t parzen_weight(float wa, float wb) {
    const float w = wa * wb;
    return static_cast<std::uint32_t>(static_cast<std::int32_t>(w * float(kWeightScale) + 0.5f));
}

// Where the interpolated moving value b falls on the Parzen axis, mapped
// first through p.mov_levels (whose knots are `mov_knots`).
STACKALIGN_HD inline ParzenPlace place_moving(float b, const RefineParams& p, const float* mov_knots) {
    if (p.mov_levels.on) b = map_level(b, p.mov_levels, mov_knots);
    ParzenPlace r;
    r.bin = parzen_place(b, p.mov_lo, p.mov_scale, p.bins, r.w);
    return r;
}

// The 16 fixed-point weights of the pair (reference placed at `ra`, b), b
// the interpolated moving value: add(bin, weight) is called for each, bin =
// row * bins + column.
template <typename Add>
STACKALIGN_HD inline void parzen_add_placed(const ParzenPlace& ra, float b, const RefineParams& p, const float* mov_knots,
                                            Add&& add) {
    const ParzenPlace rb = place_moving(b, p, mov_knots);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) add((ra.bin + i) * p.bins + rb.bin + j, parzen_weight(ra.w[i], rb.w[j]));
}

// The same from the reference value a itself.
template <typename Add>
STACKALIGN_HD inline void parzen_add(float a, float b, const RefineParams& p, const float* mov_knots, Add&& add) {
    parzen_add_placed(place_reference(a, p), b, p, mov_knots, add);
}

}  // namespace stackalign
