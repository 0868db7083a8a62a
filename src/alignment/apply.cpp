#include "apply.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "frame_warp.hpp"

namespace stackalign {
namespace {

// Frames below this many pixels are moved by the calling thread alone: a
// parallel region costs more than they do.
constexpr std::size_t kParallelPixels = std::size_t(1) << 16;

// A subpixel shift samples every row at the same columns: each output
// column's source columns and weight are worked out once per frame (the
// same double expressions as per pixel, so the same bits), and where the
// source columns run on contiguously the row loop is plain loads.
struct ShiftColumns {
    std::vector<int> x0, x1;
    std::vector<double> fx;
    int first = 0, end = 0;  // output columns with a source: [first, end)
    int run_end = 0;         // [first, run_end): x0 = x + offset, x1 = x0 + 1
    int offset = 0;

    ShiftColumns(int w, double dx) : x0(w), x1(w), fx(w), first(w), end(0) {
        for (int x = 0; x < w; ++x) {
            const double sx = x + dx;
            if (sx < 0 || sx > w - 1) continue;
            first = std::min(first, x);
            end = x + 1;
            x0[x] = std::min(int(sx), w - 1);
            x1[x] = std::min(x0[x] + 1, w - 1);
            fx[x] = sx - x0[x];
        }
        run_end = first;
        if (first < end) {
            offset = x0[first] - first;
            while (run_end < end && x0[run_end] == run_end + offset && x1[run_end] == run_end + offset + 1) ++run_end;
        }
    }
};

template <typename T>
void shift_row(const T* r0, const T* r1, T* out, const ShiftColumns& c, double fy, T fill) {
    std::fill(out, out + c.first, fill);
    for (int x = c.first; x < c.run_end; ++x) {
        const int x0 = x + c.offset;
        out[x] = blend_pixel(r0, r1, x0, x0 + 1, c.fx[x], fy);
    }
    for (int x = c.run_end; x < c.end; ++x) out[x] = blend_pixel(r0, r1, c.x0[x], c.x1[x], c.fx[x], fy);
    std::fill(out + c.end, out + c.x0.size(), fill);
}

template <typename T>
void shift_pixels(const T* src, T* dst, int w, int h, double dx, double dy, double fill) {
    const T fill_px = warp_to_pixel<T>(fill);
    const bool integer = dx == std::floor(dx) && dy == std::floor(dy);
    const ShiftColumns columns(integer ? 0 : w, dx);
    #pragma omp parallel for schedule(static) if (std::size_t(w) * h >= kParallelPixels)
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
        if (sy < 0 || sy > h - 1) {
            std::fill(out, out + w, fill_px);
            continue;
        }
        const int y0 = std::min(int(sy), h - 1), y1 = std::min(y0 + 1, h - 1);
        shift_row(src + std::size_t(y0) * w, src + std::size_t(y1) * w, out, columns, sy - y0, fill_px);
    }
}

// warped_pixel row by row: the products of the inverse map with a column's
// and a row's coordinate are made once each and summed in warped_pixel's
// order, so every pixel is the same bits.
template <typename T>
void transform_pixels(const T* src, T* dst, int w, int h, const FrameWarp& t) {
    std::vector<double> sx_of_x(w), sy_of_x(w);
    for (int x = 0; x < w; ++x) {
        const double ux = x - t.cx - t.dx;
        sx_of_x[x] = t.i11 * ux;
        sy_of_x[x] = t.i21 * ux;
    }
    const T fill = warp_to_pixel<T>(t.fill);
    const int xl = std::max(w - 2, 0), yl = std::max(h - 2, 0);
    #pragma omp parallel for schedule(static) if (std::size_t(w) * h >= kParallelPixels)
    for (int y = 0; y < h; ++y) {
        const double uy = y - t.cy - t.dy, sx_of_y = t.i12 * uy, sy_of_y = t.i22 * uy;
        T* out = dst + std::size_t(y) * w;
        for (int x = 0; x < w; ++x) {
            const double sx = sx_of_x[x] + sx_of_y + t.cx, sy = sy_of_x[x] + sy_of_y + t.cy;
            if (!(sx >= 0 && sy >= 0 && sx <= w - 1 && sy <= h - 1)) {
                out[x] = fill;
                continue;
            }
            const int x0 = std::min(int(sx), xl), y0 = std::min(int(sy), yl);
            const int x1 = std::min(x0 + 1, w - 1), y1 = std::min(y0 + 1, h - 1);
            out[x] = blend_pixel(src + std::size_t(y0) * w, src + std::size_t(y1) * w, x0, x1, sx - x0, sy - y0);
        }
    }
}

}  // namespace

FrameWarp frame_warp(const LinearTransform& t, double fill) {
    return FrameWarp::of(t.a11, t.a12, t.a21, t.a22, t.dx, t.dy, t.cx, t.cy, fill);
}

RawFrame transform_frame(const RawFrame& in, const LinearTransform& t, double fill) {
    RawFrame out = in.like();
    visit_pixels(in, [&](const auto* src) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(src)>>;
        transform_pixels<T>(src, reinterpret_cast<T*>(out.bytes.data()), in.width, in.height, frame_warp(t, fill));
    });
    return out;
}

RawFrame shift_frame(const RawFrame& in, double dx, double dy, double fill) {
    RawFrame out = in.like();
    visit_pixels(in, [&](const auto* src) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(src)>>;
        shift_pixels<T>(src, reinterpret_cast<T*>(out.bytes.data()), in.width, in.height, dx, dy, fill);
    });
    return out;
}

namespace {
// The transform an output pixel samples the input through: T's inverse,
// about the frame's centre.
LinearTransform inverse_about_centre(const Transform& t, int width, int height) {
    const Transform xf = t.inverse();
    return {xf.a11, xf.a12, xf.a21, xf.a22, xf.dx, xf.dy, (width - 1) / 2.0, (height - 1) / 2.0};
}
}  // namespace

FrameWarp apply_warp(const Transform& t, int width, int height, double fill) {
    return frame_warp(inverse_about_centre(t, width, height), fill);
}

RawFrame apply_transform(const RawFrame& in, const Transform& t, double fill) {
    if (t.is_translation()) return shift_frame(in, t.dx, t.dy, fill);
    return transform_frame(in, inverse_about_centre(t, in.width, in.height), fill);
}

}  // namespace stackalign
