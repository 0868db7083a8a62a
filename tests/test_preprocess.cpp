// CPU stages against hand-computed values; the CUDA twin against the CPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>

#include "../kernels/cuda_api.hpp"
#include "../src/alignment/frame_warp.hpp"
#include "../kernels/preprocess/preprocess.hpp"
#include "../kernels/preprocess/sobel3d.hpp"
#include "../src/alignment/apply.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

ImageF image(int w, int h, std::vector<float> v) {
    ImageF im(w, h);
    im.pixels.assign(v.begin(), v.end());
    return im;
}

std::vector<float> values(const ImageF& im) { return {im.pixels.begin(), im.pixels.end()}; }

RawFrame float_frame(const ImageF& im) {
    RawFrame f;
    f.type = PixelType::f32;
    f.width = im.width;
    f.height = im.height;
    f.bytes.resize(im.size() * 4);
    std::memcpy(f.bytes.data(), im.pixels.data(), f.bytes.size());
    return f;
}

}  // namespace

TEST_CASE("preprocess: normalise maps min..max to 0..255 whatever the pixel type") {
    const ImageF n = cpu::normalise(float_frame(image(3, 1, {-2.0f, 0.0f, 6.0f})));
    CHECK(n.pixels[0] == 0.0f);
    CHECK(n.pixels[1] == doctest::Approx(63.75));
    CHECK(n.pixels[2] == 255.0f);
    const ImageF flat = cpu::normalise(float_frame(image(2, 1, {5.0f, 5.0f})));
    CHECK(values(flat) == std::vector<float>{0.0f, 0.0f});
    const ImageF nan = cpu::normalise(float_frame(image(3, 1, {1.0f, NAN, 3.0f})));
    CHECK(values(nan) == std::vector<float>{0.0f, 0.0f, 255.0f});
}

TEST_CASE("preprocess: frame_problem and mean: non-finite, empty and constant frames of every type; exact means") {
    CHECK(frame_problem(float_frame(image(3, 1, {1.0f, 2.0f, 3.0f}))).empty());
    CHECK(frame_problem(float_frame(image(4, 1, {NAN, 2.0f, INFINITY, -INFINITY}))) ==
          "3 of 4 pixels are NaN or infinite; the others are all 2");
    CHECK(frame_problem(float_frame(image(2, 1, {NAN, NAN}))) == "2 of 2 pixels are NaN or infinite");
    CHECK(frame_problem(float_frame(image(3, 1, {NAN, -1.5f, 4.0f}))) == "1 of 3 pixels are NaN or infinite");
    CHECK(frame_problem(float_frame(image(2, 2, {0.0f, 0.0f, 0.0f, 0.0f}))) == "empty: every pixel is 0");
    auto typed = [](PixelType t, std::vector<double> v) { return frame_of(t, int(v.size()), 1, v); };
    CHECK(frame_problem(typed(PixelType::i16, {-7, -7, -7})) == "constant: every pixel is -7");
    CHECK(frame_problem(typed(PixelType::u8, {0, 255, 0})).empty());
    CHECK(frame_problem(typed(PixelType::u16, {0, 0})) == "empty: every pixel is 0");
    CHECK(frame_problem(typed(PixelType::i32, {-2000000000, 2000000000})).empty());
    // The integer sums equal the double sums in pixel order.
    CHECK(typed(PixelType::u16, {65535, 65535, 1}).mean() == (65535.0 + 65535.0 + 1.0) / 3.0);
    CHECK(typed(PixelType::i16, {-32768, 32767, 5}).mean() == 4.0 / 3.0);
    CHECK(typed(PixelType::i32, {-2000000000, 2000000000, 3}).mean() == 1.0);
}

TEST_CASE("preprocess: frame_problem and block_mean of large frames (done in parallel chunks) as of small ones") {
    // A real 512x512 frame (262144 pixels: checked and binned in chunks).
    const RawFrame& embryo = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 6);
    REQUIRE(embryo.pixel_count() >= (std::size_t(1) << 18));
    CHECK(frame_problem(embryo).empty());
    // Non-finite pixels in the first and last chunks and between are all counted.
    ImageF f = embryo.to_float();
    for (std::size_t i : {std::size_t(0), std::size_t(70000), f.size() - 1}) f.pixels[i] = NAN;
    f.pixels[200000] = INFINITY;
    CHECK(frame_problem(float_frame(f)) == "4 of 262144 pixels are NaN or infinite");
    // A constant frame whose only different pixel lies in the last chunk is not constant.
    ImageF flat(512, 512, 3.0f);
    CHECK(frame_problem(float_frame(flat)) == "constant: every pixel is 3");
    flat.pixels.back() = 2.0f;
    CHECK(frame_problem(float_frame(flat)).empty());
    flat.pixels.back() = NAN;
    CHECK(frame_problem(float_frame(flat)) == "1 of 262144 pixels are NaN or infinite; the others are all 3");
    // Block means straight from the pixels equal the float image's blocks
    // summed in order, bit for bit, in every type, with partial blocks
    // dropped (701x509: the real frame's pixels repeated, large enough to be
    // binned in parallel).
    const ImageF e = embryo.to_float();
    for (const PixelType t : {PixelType::u8, PixelType::u16, PixelType::i16, PixelType::i32, PixelType::f32}) {
        CAPTURE(to_string(t));
        const int w = 701, h = 509;
        std::vector<double> v(std::size_t(w) * h);
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                v[std::size_t(y) * w + x] = e.at(x % 512, y) * (t == PixelType::f32 ? 0.37 : 1.0);
        const RawFrame typed = frame_of(t, w, h, v);
        for (int factor : {1, 3, 8}) {
            CAPTURE(factor);
            const RawFrame binned = block_mean(typed, factor);
            // Each block's floats summed in double, row by row, then divided.
            const ImageF in = typed.to_float();
            ImageF expected(w / factor, h / factor);
            for (int y = 0; y < expected.height; ++y)
                for (int x = 0; x < expected.width; ++x) {
                    double s = 0;
                    for (int j = 0; j < factor; ++j)
                        for (int i = 0; i < factor; ++i) s += in.at(x * factor + i, y * factor + j);
                    expected.at(x, y) = float(s / (factor * factor));
                }
            REQUIRE(binned.width == expected.width);
            REQUIRE(binned.height == expected.height);
            CHECK(binned.type == PixelType::f32);
            CHECK(std::memcmp(binned.bytes.data(), expected.pixels.data(), binned.bytes.size()) == 0);
        }
    }
}

TEST_CASE("preprocess: mean filter against hand-computed values, edges replicated") {
    // 3x3 input 1..9; radius 1.
    const ImageF m = cpu::mean_filter(image(3, 3, {1, 2, 3, 4, 5, 6, 7, 8, 9}), 1);
    CHECK(m.at(1, 1) == doctest::Approx(5.0));
    // Corner (0,0): rows {1,1,2},{1,1,2},{4,4,5} -> 21/9.
    CHECK(m.at(0, 0) == doctest::Approx(21.0 / 9));
    // (2,1): rows {2,3,3},{5,6,6},{8,9,9} -> 51/9.
    CHECK(m.at(2, 1) == doctest::Approx(51.0 / 9));
    CHECK(values(cpu::mean_filter(image(2, 1, {1, 2}), 0)) == std::vector<float>{1, 2});
}

TEST_CASE("preprocess: Sobel magnitude of a vertical step is 4h on the edge, 0 elsewhere") {
    ImageF step(6, 5);
    for (int y = 0; y < 5; ++y)
        for (int x = 3; x < 6; ++x) step.at(x, y) = 10.0f;
    const ImageF s = cpu::sobel_magnitude(step);
    CHECK(s.at(0, 2) == 0.0f);
    CHECK(s.at(2, 2) == 40.0f);
    CHECK(s.at(3, 2) == 40.0f);
    CHECK(s.at(5, 2) == 0.0f);
    // A diagonal ramp value = x + y: gx = 8, gy = 8 away from the border.
    ImageF ramp(5, 5);
    for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 5; ++x) ramp.at(x, y) = float(x + y);
    CHECK(cpu::sobel_magnitude(ramp).at(2, 2) == doctest::Approx(std::sqrt(128.0)));
}

namespace {

// The mean filter and Sobel as defined, a pixel at a time with clamped
// neighbours (what the CUDA twins compute): the CPU's row passes must give
// the same words.
ImageF mean_by_pixel(const ImageF& in, int r) {
    const int w = in.width, h = in.height;
    ImageF rows(w, h), out(w, h);
    const float inv = 1.0f / float((2 * r + 1) * (2 * r + 1));
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            float acc = 0.0f;
            for (int i = -r; i <= r; ++i) acc += in.at(std::clamp(x + i, 0, w - 1), y);
            rows.at(x, y) = acc;
        }
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            float acc = 0.0f;
            for (int j = -r; j <= r; ++j) acc += rows.at(x, std::clamp(y + j, 0, h - 1));
            out.at(x, y) = acc * inv;
        }
    return out;
}

ImageF sobel_by_pixel(const ImageF& in) {
    const int w = in.width, h = in.height;
    ImageF out(w, h);
    auto v = [&](int x, int y) { return in.at(std::clamp(x, 0, w - 1), std::clamp(y, 0, h - 1)); };
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const int l = std::max(x - 1, 0), r = std::min(x + 1, w - 1);
            const float gx = (v(r, y - 1) + 2.0f * v(r, y) + v(r, y + 1)) - (v(l, y - 1) + 2.0f * v(l, y) + v(l, y + 1));
            const float gy = (v(l, y + 1) + 2.0f * v(x, y + 1) + v(r, y + 1)) - (v(l, y - 1) + 2.0f * v(x, y - 1) + v(r, y - 1));
            out.at(x, y) = std::sqrt(gx * gx + gy * gy);
        }
    return out;
}

}  // namespace

TEST_CASE("preprocess: the CPU's mean filter and Sobel, row passes, are the pixel-by-pixel definitions word for word") {
    // Crops of a real frame: ordinary, narrower than the filter, one pixel
    // wide or high, odd.
    const RawFrame& frame = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 6);
    for (const auto& [w, h] : {std::pair{145, 119}, {1, 30}, {30, 1}, {2, 2}, {4, 9}, {67, 130}}) {
        CAPTURE(w);
        CAPTURE(h);
        const ImageF im = cpu::normalise(crop(frame, 100, 150, w, h));
        for (int r : {1, 2, 5}) {
            CAPTURE(r);
            CHECK(cpu::mean_filter(im, r).pixels == mean_by_pixel(im, r).pixels);
        }
        CHECK(cpu::sobel_magnitude(im).pixels == sobel_by_pixel(im).pixels);
    }
}

TEST_CASE("preprocess: quantize keeps zeros in bin 0 and spreads [threshold, max] over 1..bins-1") {
    const BinImage q = cpu::quantize(image(6, 1, {0.0f, 19.9f, 20.0f, 60.0f, 99.9f, 100.0f}), 20.0f, 5);
    CHECK(std::vector<int>(q.pixels.begin(), q.pixels.end()) == std::vector<int>{0, 0, 1, 3, 4, 4});
    const BinImage zero = cpu::quantize(image(2, 1, {0.0f, 0.0f}), 0.0f, 8);
    CHECK(std::vector<int>(zero.pixels.begin(), zero.pixels.end()) == std::vector<int>{0, 0});
}

TEST_CASE("preprocess: on a real frame, threshold empties the background") {
    const RawFrame& f = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 0);
    const BinImage b = cpu::preprocess(f, PreprocessParams{1, true, 20.0f, 64});
    const auto zeros = std::count(b.pixels.begin(), b.pixels.end(), 0);
    CHECK(zeros > b.size() / 2);  // (0,0) pairs dominate, as the GPU design assumes
    CHECK(zeros < b.size());
    CHECK(*std::max_element(b.pixels.begin(), b.pixels.end()) == 63);
}

TEST_CASE("preprocess: CUDA twin gives identical bins on real and random frames") {
    if (skip_without_gpu()) return;
    std::mt19937 rng(7);
    std::vector<RawFrame> frames = {sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 3),
                                    sample_frame("sample_data/haadf_tilt_91x64x64.tif", 10)};
    ImageF noise(97, 61);
    for (float& v : noise.pixels) v = std::uniform_real_distribution<float>(-5, 1000)(rng);
    frames.push_back(float_frame(noise));
    frames.push_back(float_frame(image(1, 1, {3.0f})));
    frames.push_back(float_frame(ImageF(33, 17, 2.0f)));  // constant: all bin 0
    frames.push_back(sample_volume("sample_data/fish1_pre_anatomy_41x83x166.tif"));  // 3D: box and Sobel in 3D
    frames.push_back(crop_volume(sample_volume("sample_data/fish1_post_anatomy_41x83x166.tif"), 3, 5, 2, 31, 9, 2));
    for (const RawFrame& f : frames)
        for (const PreprocessParams& p : {PreprocessParams{1, true, 20.0f, 64}, PreprocessParams{0, true, 5.0f, 256},
                                          PreprocessParams{3, false, 50.0f, 17}, PreprocessParams{2, true, 0.0f, 2}}) {
            CAPTURE(f.width);
            CAPTURE(p.mean_radius);
            CAPTURE(p.bins);
            const BinImage c = cpu::preprocess(f, p);
            const BinImage g = cuda::preprocess(f, p);
            CHECK(g.width == c.width);
            CHECK(g.height == c.height);
            CHECK(g.depth == c.depth);
            CHECK(g.pixels == c.pixels);
        }
}

TEST_CASE("preprocess: the CUDA warp (stretched and turned views) gives transform_frame's pixels, every pixel type") {
    if (skip_without_gpu()) return;
    // Real frames: u8 (embryo), f32 (HAADF), and u16 / i16 / i32 copies of the embryo frame.
    const RawFrame& u8 = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 3);
    std::vector<RawFrame> frames = {u8, sample_frame("sample_data/haadf_tilt_91x64x64.tif", 10)};
    for (PixelType type : {PixelType::u16, PixelType::i16, PixelType::i32}) {
        RawFrame f{type, u8.width, u8.height, 1, {}};
        const int size = type == PixelType::i32 ? 4 : 2;
        f.bytes.resize(u8.pixel_count() * size);
        for (std::size_t i = 0; i < u8.pixel_count(); ++i) {
            const int v = u8.bytes[i] * 251 - (type == PixelType::u16 ? 0 : 20000);
            if (size == 4) std::memcpy(&f.bytes[i * 4], &v, 4);
            else if (type == PixelType::u16) { const std::uint16_t w = std::uint16_t(v); std::memcpy(&f.bytes[i * 2], &w, 2); }
            else { const std::int16_t w = std::int16_t(v / 2); std::memcpy(&f.bytes[i * 2], &w, 2); }
        }
        frames.push_back(f);
    }
    for (const RawFrame& f : frames) {
        const double cx = (f.width - 1) / 2.0, cy = (f.height - 1) / 2.0, c = std::cos(0.3), s = std::sin(0.3);
        for (const LinearTransform& t : {LinearTransform{1.0 / 0.37, 0, 0, 1, 0.4, -1.2, cx, cy},  // a stretch
                                         LinearTransform{c, -s, s, c, 0, 0, cx, cy},              // a turn
                                         LinearTransform{1.02 * c, 1.02 * s, -1.02 * s, 1.02 * c, 2.5, 0.25, cx + 3, cy}}) {
            CAPTURE(int(f.type));
            CAPTURE(t.a11);
            const RawFrame host = transform_frame(f, t, f.mean());
            const RawFrame gpu = cuda::warp_frame(f, frame_warp(t, f.mean()));
            CHECK(gpu.bytes == host.bytes);
        }
    }
}

namespace {

// The 3D box mean's definition (the GPU twin's passes), voxel by voxel.
ImageF mean3d_by_voxel(const ImageF& in, int r) {
    const int w = in.width, h = in.height, d = in.depth;
    ImageF a = ImageF::volume(w, h, d), b = ImageF::volume(w, h, d);
    const float inv = 1.0f / float((2 * r + 1) * (2 * r + 1) * (2 * r + 1));
    auto pass = [&](const ImageF& from, ImageF& to, int axis, float scale) {
        for (int z = 0; z < d; ++z)
            for (int y = 0; y < h; ++y)
                for (int x = 0; x < w; ++x) {
                    float acc = 0.0f;
                    for (int i = -r; i <= r; ++i)
                        acc += axis == 0   ? from.at(std::clamp(x + i, 0, w - 1), y, z)
                               : axis == 1 ? from.at(x, std::clamp(y + i, 0, h - 1), z)
                                           : from.at(x, y, std::clamp(z + i, 0, d - 1));
                    to.at(x, y, z) = axis == 2 ? acc * scale : acc;
                }
    };
    pass(in, a, 0, 1.0f);
    pass(a, b, 1, 1.0f);
    pass(b, a, 2, inv);
    return a;
}

}  // namespace

TEST_CASE("preprocess 3D: the CPU's box mean and Sobel, a row of voxels at a time, are the voxel-by-voxel definitions word for word") {
    // Blocks of the real brain: ordinary, one or two voxels along an axis, odd.
    for (const auto& [w, h, d] : {std::array{97, 61, 23}, {1, 9, 5}, {9, 1, 5}, {9, 5, 2}, {2, 2, 2}, {3, 40, 7}}) {
        CAPTURE(w);
        CAPTURE(h);
        CAPTURE(d);
        const ImageF v = cpu::normalise(crop_volume(sample_volume("sample_data/fish1_pre_anatomy_41x83x166.tif"), 30, 10, 8, w, h, d));
        for (int r : {1, 2}) {
            CAPTURE(r);
            CHECK(cpu::mean_filter(v, r).pixels == mean3d_by_voxel(v, r).pixels);
        }
        ImageF expected = ImageF::volume(w, h, d);
        for (int z = 0; z < d; ++z)
            for (int y = 0; y < h; ++y)
                for (int x = 0; x < w; ++x) expected.at(x, y, z) = sobel3d_magnitude(v.pixels.data(), w, h, d, x, y, z);
        CHECK(cpu::sobel_magnitude(v).pixels == expected.pixels);
    }
}

TEST_CASE("preprocess 3D: box mean of one spike, Sobel of a step, per voxel") {
    ImageF v = ImageF::volume(5, 5, 5, 0.0f);
    v.at(2, 2, 2) = 27.0f;
    const ImageF m = cpu::mean_filter(v, 1);
    CHECK(m.depth == 5);
    CHECK(m.at(2, 2, 2) == doctest::Approx(1.0f));  // 27 / 3^3
    CHECK(m.at(1, 3, 1) == doctest::Approx(1.0f));  // inside the 3x3x3 box
    CHECK(m.at(0, 2, 2) == 0.0f);                   // outside it
    // A step of height 10 along z: 3D Sobel gives 16 x 10 at the step, 0 away.
    ImageF step = ImageF::volume(4, 4, 6, 0.0f);
    for (int z = 3; z < 6; ++z)
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 4; ++x) step.at(x, y, z) = 10.0f;
    const ImageF s = cpu::sobel_magnitude(step);
    CHECK(s.at(1, 2, 2) == doctest::Approx(160.0f));
    CHECK(s.at(1, 2, 3) == doctest::Approx(160.0f));
    CHECK(s.at(1, 2, 0) == 0.0f);
    CHECK(s.at(3, 0, 5) == 0.0f);
    const BinImage b = cpu::quantize(s, 20.0f, 8);
    CHECK(b.depth == 6);
    CHECK(b.at(1, 2, 2) == 7);
}
