#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "../src/alignment/apply.hpp"
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
