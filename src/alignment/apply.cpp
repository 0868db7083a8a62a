#include "apply.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "frame_warp.hpp"

namespace stackalign {
namespace {

template <typename T>
void shift_pixels(const T* src, T* dst, int w, int h, double dx, double dy, double fill) {
    const T fill_px = warp_to_pixel<T>(fill);
    const bool integer = dx == std::floor(dx) && dy == std::floor(dy);
    #pragma omp parallel for schedule(static)
    for (int y = 0; y < h; ++y) {
        T* out = dst + std::size_t(y) * w;
        const double sy = y + dy;
        if (integer) {
            const int iy = y + int(dy);
            for (int x = 0; x < w; ++x) {
                const int ix = x + int(dx);
                out[x] = (ix >= 0 && ix < w && iy >= 0 && iy < h) ? src[std::size_t(iy) * w + ix] : fill_px;
            }
            continue;
        }
        for (int x = 0; x < w; ++x) {
            const double sx = x + dx;
            if (sx < 0 || sy < 0 || sx > w - 1 || sy > h - 1) {
                out[x] = fill_px;
                continue;
            }
            const int x0 = std::min(int(sx), w - 1), y0 = std::min(int(sy), h - 1);
            const int x1 = std::min(x0 + 1, w - 1), y1 = std::min(y0 + 1, h - 1);
            const double fx = sx - x0, fy = sy - y0;
            const double top = (1 - fx) * double(src[std::size_t(y0) * w + x0]) + fx * double(src[std::size_t(y0) * w + x1]);
            const double bot = (1 - fx) * double(src[std::size_t(y1) * w + x0]) + fx * double(src[std::size_t(y1) * w + x1]);
            out[x] = warp_to_pixel<T>((1 - fy) * top + fy * bot);
        }
    }
}

template <typename T>
void transform_pixels(const T* src, T* dst, int w, int h, const FrameWarp& t) {
    #pragma omp parallel for schedule(static)
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) dst[std::size_t(y) * w + x] = warped_pixel<T>(src, w, h, t, x, y);
}

}  // namespace

FrameWarp frame_warp(const LinearTransform& t, double fill) {
    return FrameWarp::of(t.a11, t.a12, t.a21, t.a22, t.dx, t.dy, t.cx, t.cy, fill);
}

RawFrame transform_frame(const RawFrame& in, const LinearTransform& t, double fill) {
    RawFrame out = in;
    visit_pixels(in, [&](const auto* src) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(src)>>;
        transform_pixels<T>(src, reinterpret_cast<T*>(out.bytes.data()), in.width, in.height, frame_warp(t, fill));
    });
    return out;
}

RawFrame shift_frame(const RawFrame& in, double dx, double dy, double fill) {
    RawFrame out = in;
    visit_pixels(in, [&](const auto* src) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(src)>>;
        shift_pixels<T>(src, reinterpret_cast<T*>(out.bytes.data()), in.width, in.height, dx, dy, fill);
    });
    return out;
}

RawFrame apply_transform(const RawFrame& in, const Transform& t, double fill) {
    if (t.is_translation()) return shift_frame(in, t.dx, t.dy, fill);
    const Transform xf = t.inverse();
    const LinearTransform about{xf.a11, xf.a12, xf.a21, xf.a22, xf.dx, xf.dy, (in.width - 1) / 2.0, (in.height - 1) / 2.0};
    return transform_frame(in, about, fill);
}

}  // namespace stackalign
