// Views sampled on the tilt-axis grid (kernels/axis_grid): the grid's
// geometry on the CPU, and the CUDA twin's floats the CPU's for every pixel
// type, binning and axis.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../kernels/axis_grid/axis_grid.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {
// A crop of the real embryo frame in `type` (values scaled into its range).
RawFrame frame_in(PixelType type, int w, int h) {
    const ImageF f = crop(sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 8), 100, 120, w, h).to_float();
    std::vector<double> v(f.pixels.begin(), f.pixels.end());
    const double scale = type == PixelType::u8 ? 0.9 : type == PixelType::f32 ? 0.37 : 37.0;
    for (double& x : v) x = std::round(x * scale) + (type == PixelType::f32 ? 0.25 : 0.0);
    return frame_of(type, w, h, v);
}
}  // namespace

TEST_CASE("axis grid: on the frame's own grid each pixel is the frame's; a moved view is NaN where it leaves the frame") {
    const RawFrame frame = frame_in(PixelType::u16, 48, 40);
    const ImageF f = frame.to_float();
    const AxisGrid g = axis_grid(48, 40, 0.0, 1);
    std::vector<float> out(std::size_t(g.width) * g.rows);
    cpu::sample_on_axis_grid(frame, Transform::translation(0, 0), g, out.data());
    CHECK(std::equal(out.begin(), out.end(), f.pixels.begin()));
    // Content moved by +3 px in x: grid pixel i shows frame pixel i + 3,
    // and the last 3 columns fall outside.
    cpu::sample_on_axis_grid(frame, Transform::translation(3, 0), g, out.data());
    CHECK(out[5] == f.pixels[8]);
    CHECK(std::isnan(out[46]));
    CHECK(!std::isnan(out[44]));
    // Binned 2: each pixel the mean of its 2 x 2 samples, a half pixel from their centre.
    const AxisGrid g2 = axis_grid(48, 40, 0.0, 2);
    std::vector<float> binned(std::size_t(g2.width) * g2.rows);
    cpu::sample_on_axis_grid(frame, Transform::translation(0, 0), g2, binned.data());
    const float mean = float((double(f.pixels[0]) + f.pixels[1] + f.pixels[48] + f.pixels[49]) / 4);
    CHECK(binned[0] == doctest::Approx(mean).epsilon(1e-6));
}

TEST_CASE("axis grid: the CUDA twin samples every pixel type as the CPU does, bit for bit") {
    if (skip_without_gpu()) return;
    Transform moved = Transform::translation(4.3, -7.6);
    moved.a11 = 0.999, moved.a12 = 0.02, moved.a21 = -0.015, moved.a22 = 1.001;
    for (PixelType type : {PixelType::u8, PixelType::u16, PixelType::i16, PixelType::i32, PixelType::f32}) {
        const RawFrame frame = frame_in(type, 160, 120);
        for (double axis : {0.0, 84.0, -23.0})
            for (int bin : {1, 3}) {
                CAPTURE(int(type));
                CAPTURE(axis);
                CAPTURE(bin);
                const AxisGrid g = axis_grid(160, 120, axis, bin);
                std::vector<float> a(std::size_t(g.width) * g.rows), b(a.size());
                cpu::sample_on_axis_grid(frame, moved, g, a.data());
                cuda::sample_on_axis_grid(frame, moved, g, b.data(), 0);
                int nan = 0;
                for (float v : a) nan += std::isnan(v);
                CHECK(nan > 0);  // the frame's edges cross the grid
                CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
            }
    }
}
