#include <doctest/doctest.h>

#include <cstring>

#include "../src/alignment/apply.hpp"

using namespace stackalign;

namespace {
RawFrame u16(int w, int h, std::vector<std::uint16_t> v) {
    RawFrame f;
    f.type = PixelType::u16;
    f.width = w;
    f.height = h;
    f.bytes.resize(v.size() * 2);
    std::memcpy(f.bytes.data(), v.data(), f.bytes.size());
    return f;
}
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
