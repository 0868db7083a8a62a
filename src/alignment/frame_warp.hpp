// One output pixel of a frame resampled through a linear transform (IMOD's
// convention, src/alignment/apply.hpp's transform_frame): bilinear, rounded
// to the frame's own pixel type, `fill` where the source falls outside.
// Written once for the host and the GPU, so the views a search turns or
// stretches are the same pixels on both backends (double arithmetic, no FMA
// contraction on either side).
#pragma once
#include <math.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "../core/host_device.hpp"

namespace stackalign {

// The inverse map out -> in of X' = A (X - c) + D + c, ready for every pixel.
struct FrameWarp {
    double i11 = 1, i12 = 0, i21 = 0, i22 = 1;  // A^-1
    double dx = 0, dy = 0, cx = 0, cy = 0;
    double fill = 0;
    static FrameWarp of(double a11, double a12, double a21, double a22, double dx, double dy, double cx, double cy,
                        double fill) {
        const double det = a11 * a22 - a12 * a21;
        return {a22 / det, -a12 / det, -a21 / det, a11 / det, dx, dy, cx, cy, fill};
    }
};

// A resampled value in the frame's pixel type: integers rounded (halves
// away from zero) and clamped to the type's range (shift_frame's too).
template <typename T>
STACKALIGN_HD inline T warp_to_pixel(double v) {
    if constexpr (std::is_floating_point_v<T>) {
        return T(v);
    } else {
        // Clamped first, so the truncation stays in T's range; v - trunc(v)
        // is exact, so comparing it with one half rounds as round() does,
        // without the library call that was a third of the host's
        // resampling time (no SSE4.1 rounding instruction in the build).
        static_assert(sizeof(T) <= 4, "pixel types are at most 32 bits");
        const double lo = double(std::numeric_limits<T>::min()), hi = double(std::numeric_limits<T>::max());
        double c = v > lo ? v : lo;
        c = c < hi ? c : hi;
        const long long t = (long long)c;
        const double f = c - double(t);
        return T(t + (f >= 0.5 ? 1 : 0) - (f <= -0.5 ? 1 : 0));
    }
}

// The bilinear blend of rows r0 (above) and r1 at columns x0 and x1,
// weights fx across and fy down: every resampler of frames (this file's
// warped_pixel and apply.cpp's row loops) blends through it, so their pixels
// are the same bits.
template <typename T>
STACKALIGN_HD inline T blend_pixel(const T* r0, const T* r1, int x0, int x1, double fx, double fy) {
    const double top = (1 - fx) * double(r0[x0]) + fx * double(r0[x1]);
    const double bot = (1 - fx) * double(r1[x0]) + fx * double(r1[x1]);
    return warp_to_pixel<T>((1 - fy) * top + fy * bot);
}

template <typename T>
STACKALIGN_HD inline T warped_pixel(const T* src, int w, int h, const FrameWarp& t, int x, int y) {
    const double ux = x - t.cx - t.dx, uy = y - t.cy - t.dy;
    const double sx = t.i11 * ux + t.i12 * uy + t.cx, sy = t.i21 * ux + t.i22 * uy + t.cy;
    if (!(sx >= 0 && sy >= 0 && sx <= w - 1 && sy <= h - 1)) return warp_to_pixel<T>(t.fill);
    const int xl = w - 2 < 0 ? 0 : w - 2, yl = h - 2 < 0 ? 0 : h - 2;
    const int x0 = int(sx) < xl ? int(sx) : xl, y0 = int(sy) < yl ? int(sy) : yl;
    const int x1 = x0 + 1 < w - 1 ? x0 + 1 : w - 1, y1 = y0 + 1 < h - 1 ? y0 + 1 : h - 1;
    const double fx = sx - x0, fy = sy - y0;
    return blend_pixel(src + std::size_t(y0) * w, src + std::size_t(y1) * w, x0, x1, fx, fy);
}

}  // namespace stackalign
