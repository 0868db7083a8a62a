#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "../kernels/apply/frame_mover.hpp"
#include "../src/alignment/apply.hpp"
#include "../src/alignment/frame_warp.hpp"
#include "../src/alignment/motion.hpp"
#include "test_support.hpp"

using namespace stackalign;

namespace {
RawFrame u16(int w, int h, std::vector<double> v) { return test_support::frame_of(PixelType::u16, w, h, v); }
std::vector<std::uint16_t> pixels(const RawFrame& f) {
    std::vector<std::uint16_t> v(f.pixel_count());
    std::memcpy(v.data(), f.bytes.data(), f.bytes.size());
    return v;
}
}  // namespace

TEST_CASE("apply: integer shifts copy pixels exactly and fill the border") {
    const RawFrame in = u16(3, 2, {1, 2, 3, 4, 5, 6});
    // Content offset (+1, 0): the aligned frame is the input moved left by 1.
    CHECK(pixels(shift_frame(in, 1, 0, 99)) == std::vector<std::uint16_t>{2, 3, 99, 5, 6, 99});
    CHECK(pixels(shift_frame(in, -1, 1, 7)) == std::vector<std::uint16_t>{7, 4, 5, 7, 7, 7});
    CHECK(pixels(shift_frame(in, 0, 0, 0)) == pixels(in));
}

TEST_CASE("apply: subpixel shifts interpolate and round to the pixel type") {
    const RawFrame in = u16(3, 1, {10, 20, 31});
    CHECK(pixels(shift_frame(in, 0.5, 0, 0)) == std::vector<std::uint16_t>{15, 26, 0});
    RawFrame f = in;
    f.type = PixelType::u8;
    f.bytes = {250, 255, 0};
    f.width = 3;
    CHECK(shift_frame(f, 0.5, 0, 300).bytes == std::vector<unsigned char>{253, 128, 255});  // fill clamped
}

TEST_CASE("apply: subpixel shifts of int16 frames round halves away from zero, as std::round, on random values") {
    // Shifts by a half make exact halves (negative ones too); other shifts
    // make values near them. Reference: the same bilinear sum, std::round.
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> value(-32768, 32767);
    const int w = 64, h = 8;
    std::vector<double> v(std::size_t(w) * h);
    for (auto& p : v) p = value(rng);
    const RawFrame in = test_support::frame_of(PixelType::i16, w, h, v);
    for (const double dx : {0.5, -0.5, 0.25, 0.1, 0.7500000001}) {
        const RawFrame out = shift_frame(in, dx, 0.5, 0);
        std::vector<std::int16_t> got(v.size());
        std::memcpy(got.data(), out.bytes.data(), out.bytes.size());
        int checked = 0;
        for (int y = 0; y + 1 < h; ++y)
            for (int x = 1; x + 1 < w; ++x) {
                const double sx = x + dx, fx = sx - int(sx);
                auto at = [&](int xx, int yy) { return v[std::size_t(yy) * w + xx]; };
                const int x0 = int(sx);
                const double top = (1 - fx) * at(x0, y) + fx * at(x0 + 1, y);
                const double bot = (1 - fx) * at(x0, y + 1) + fx * at(x0 + 1, y + 1);
                const double want = std::clamp(std::round(0.5 * top + 0.5 * bot), -32768.0, 32767.0);
                CHECK(double(got[std::size_t(y) * w + x]) == want);
                ++checked;
            }
        CHECK(checked > 400);
    }
}

namespace {
// Random pixels across the type's range (float32: signed, fractional).
RawFrame random_frame(PixelType type, int w, int h, std::mt19937& rng) {
    const double lo = type == PixelType::u8 ? 0 : type == PixelType::u16 ? 0 : type == PixelType::i16 ? -32768 : -1e6;
    const double hi = type == PixelType::u8 ? 255 : type == PixelType::u16 ? 65535 : type == PixelType::i16 ? 32767 : 1e6;
    std::uniform_real_distribution<double> value(lo, hi);
    std::vector<double> v(std::size_t(w) * h);
    for (auto& p : v) p = type == PixelType::f32 ? value(rng) : std::round(value(rng));
    return test_support::frame_of(type, w, h, v);
}

// The bilinear shift written out per pixel: the reference the row-wise
// shift (column tables, contiguous runs) must reproduce bit for bit.
template <typename T>
std::vector<T> shift_reference(const RawFrame& in, double dx, double dy, double fill) {
    const int w = in.width, h = in.height;
    const T* src = reinterpret_cast<const T*>(in.bytes.data());
    std::vector<T> out(std::size_t(w) * h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double sx = x + dx, sy = y + dy;
            T& o = out[std::size_t(y) * w + x];
            if (sx < 0 || sy < 0 || sx > w - 1 || sy > h - 1) {
                o = warp_to_pixel<T>(fill);
                continue;
            }
            const int x0 = std::min(int(sx), w - 1), y0 = std::min(int(sy), h - 1);
            const int x1 = std::min(x0 + 1, w - 1), y1 = std::min(y0 + 1, h - 1);
            const double fx = sx - x0, fy = sy - y0;
            const double top = (1 - fx) * double(src[std::size_t(y0) * w + x0]) + fx * double(src[std::size_t(y0) * w + x1]);
            const double bot = (1 - fx) * double(src[std::size_t(y1) * w + x0]) + fx * double(src[std::size_t(y1) * w + x1]);
            o = warp_to_pixel<T>((1 - fy) * top + fy * bot);
        }
    return out;
}

template <typename T>
bool same_pixels(const RawFrame& f, const std::vector<T>& want) {
    return f.bytes.size() == want.size() * sizeof(T) && std::memcmp(f.bytes.data(), want.data(), f.bytes.size()) == 0;
}
}  // namespace

TEST_CASE("apply: shifts by rows give the per-pixel bilinear formula's bits, every pixel type, sizes and shifts") {
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> shift(-40, 40);
    int compared = 0;
    for (const PixelType type : {PixelType::u8, PixelType::u16, PixelType::i16, PixelType::i32, PixelType::f32})
        for (const auto& [w, h] : std::vector<std::pair<int, int>>{{1, 1}, {2, 3}, {37, 5}, {64, 48}, {300, 260}}) {
            const RawFrame in = random_frame(type, w, h, rng);
            // Random shifts, shifts past the frame, halves, one ulp off whole pixels.
            std::vector<std::pair<double, double>> shifts{{0.5, -0.5}, {w + 0.25, 0.1}, {-0.25, -h - 1.5},
                                                          {std::nextafter(3.0, 0.0), std::nextafter(-2.0, 0.0)},
                                                          {1e-9, 0}, {w - 1.5, h - 1.5}};
            for (int i = 0; i < 6; ++i) shifts.push_back({shift(rng), shift(rng)});
            for (const auto& [dx, dy] : shifts) {
                const double fill = shift(rng) * 1000;
                const RawFrame out = shift_frame(in, dx, dy, fill);
                visit_pixels(in, [&](const auto* p) {
                    using T = std::remove_const_t<std::remove_pointer_t<decltype(p)>>;
                    CHECK_MESSAGE(same_pixels(out, shift_reference<T>(in, dx, dy, fill)),
                                  to_string(type) << " " << w << "x" << h << " shift " << dx << ", " << dy);
                });
                ++compared;
            }
        }
    CHECK(compared == 5 * 5 * 12);
}

TEST_CASE("apply: transform_frame by rows gives warped_pixel's bits at every pixel, every pixel type") {
    std::mt19937 rng(12);
    std::uniform_real_distribution<double> angle(-0.6, 0.6), scale(0.5, 2.0), offset(-30, 30);
    for (const PixelType type : {PixelType::u8, PixelType::u16, PixelType::i16, PixelType::i32, PixelType::f32})
        for (const auto& [w, h] : std::vector<std::pair<int, int>>{{1, 1}, {2, 2}, {45, 31}, {256, 200}})
            for (int i = 0; i < 4; ++i) {
                const RawFrame in = random_frame(type, w, h, rng);
                const double a = angle(rng), s = i == 0 ? 1.0 : scale(rng);
                const LinearTransform t{s * std::cos(a), -s * std::sin(a), std::sin(a), std::cos(a) / s,
                                        offset(rng), offset(rng), (w - 1) / 2.0 + offset(rng) / 10, (h - 1) / 2.0};
                const double fill = offset(rng) * 100;
                const RawFrame out = transform_frame(in, t, fill);
                const FrameWarp warp = frame_warp(t, fill);
                visit_pixels(in, [&](const auto* p) {
                    using T = std::remove_const_t<std::remove_pointer_t<decltype(p)>>;
                    std::vector<T> want(std::size_t(w) * h);
                    for (int y = 0; y < h; ++y)
                        for (int x = 0; x < w; ++x) want[std::size_t(y) * w + x] = warped_pixel<T>(p, w, h, warp, x, y);
                    CHECK_MESSAGE(same_pixels(out, want), to_string(type) << " " << w << "x" << h << " transform " << i);
                });
            }
}

TEST_CASE("apply: a resampled value in an integer type is std::round's, clamped to the type") {
    // Exact halves, one ulp either side of them, values far outside the type.
    std::vector<double> values{0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 254.5, 255.5, 65534.5, 65535.4999, 1e300, -1e300,
                               -32768.5, 32767.5, 2147483646.5, 2147483647.5, -2147483648.5, 4e9};
    for (const double half : {0.5, 1.5, 100.5, -7.5, 32766.5})
        values.insert(values.end(), {std::nextafter(half, 0.0), std::nextafter(half, 1e9), std::nextafter(half, -1e9)});
    std::mt19937 rng(13);
    std::uniform_real_distribution<double> any(-3e9, 3e9);
    for (int i = 0; i < 2000; ++i) values.push_back(i % 2 ? any(rng) : any(rng) / 1e5);
    auto want = [](double v, double lo, double hi) { return std::clamp(std::round(v), lo, hi); };
    for (const double v : values) {
        CHECK(double(warp_to_pixel<std::uint8_t>(v)) == want(v, 0, 255));
        CHECK(double(warp_to_pixel<std::uint16_t>(v)) == want(v, 0, 65535));
        CHECK(double(warp_to_pixel<std::int16_t>(v)) == want(v, -32768, 32767));
        CHECK(double(warp_to_pixel<std::int32_t>(v)) == want(v, -2147483648.0, 2147483647.0));
    }
}

TEST_CASE("apply: frames moved on the GPU are the CPU's bytes, every pixel type, whole and fractional shifts, turns") {
    if (test_support::skip_without_gpu()) return;
    std::mt19937 rng(13);
    const auto gpu = cuda::make_frame_mover(3, 0, true), cpu = make_frame_mover({Backend::cpu, 0}, 1);
    std::uniform_real_distribution<double> offset(-30, 30);
    int compared = 0;
    for (const PixelType type : {PixelType::u8, PixelType::u16, PixelType::i16, PixelType::i32, PixelType::f32})
        for (const auto& [w, h] : std::vector<std::pair<int, int>>{{1, 1}, {37, 5}, {300, 260}}) {
            const RawFrame in = random_frame(type, w, h, rng);
            // Whole, fractional, past the frame, one ulp off a whole pixel, turned and scaled.
            for (const Transform& t : {Transform::translation(3, -2), Transform::translation(0.37, -1.61),
                                       Transform::translation(w + 0.25, 0.1), Transform::translation(std::nextafter(3.0, 0.0), 0.5),
                                       rotation_scale(7.5, 1.0, offset(rng), offset(rng)),
                                       rotation_scale(-3, 1.03, 0.4, -2.2)}) {
                const double fill = offset(rng) * 100;
                CHECK_MESSAGE(gpu->move(in, t, fill).bytes == cpu->move(in, t, fill).bytes,
                              to_string(type) << " " << w << "x" << h << " " << t.dx << ", " << t.dy << ", a11 " << t.a11);
                ++compared;
            }
        }
    CHECK(compared == 5 * 3 * 6);
}
