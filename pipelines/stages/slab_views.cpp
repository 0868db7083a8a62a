#include "slab_views.hpp"

#include <algorithm>
#include <memory>

#include "../../kernels/axis_grid/axis_grid.hpp"
#include "../../src/alignment/band_pass.hpp"

namespace stackalign {
namespace {

// Each view's slopes: central differences of this many fit pixels.
constexpr double kSlopeStep = 0.5;

// One view's held pixels meaned over factor x factor boxes, the edge of the
// part inside every frame held beyond it: the mean of factor^2 bilinear
// samples a pixel apart (a fit pixel) is then one bilinear sample of it,
// where it had taken most of the depth scan's time at factor 8.
struct BoxedView {
    int x0 = 0, y0 = 0, width = 0, rows = 0;  // box (x0, y0) covers held pixels x0..x0+factor-1
    std::vector<double> mean;
};

BoxedView boxed_view(const HeldViews& h, int view, int factor) {
    const GridRect& v = h.valid;
    BoxedView b;
    b.x0 = v.x - factor + 1, b.y0 = v.y - factor + 1;
    b.width = v.width + factor - 1, b.rows = v.height + factor - 1;
    const float* p = h.pixels[std::size_t(view)].data();
    auto held = [&](int x, int y) {
        x = std::clamp(x, v.x, v.x + v.width - 1), y = std::clamp(y, v.y, v.y + v.height - 1);
        return double(p[std::size_t(y) * h.width + x]);
    };
    // Sums across, then down; each box's sum in the same order for every box.
    std::vector<double> across(std::size_t(b.width) * (b.rows + factor - 1));
    for (int j = 0; j < b.rows + factor - 1; ++j)
        for (int i = 0; i < b.width; ++i) {
            double s = 0;
            for (int m = 0; m < factor; ++m) s += held(b.x0 + i + m, b.y0 + j);
            across[std::size_t(j) * b.width + i] = s;
        }
    b.mean.resize(std::size_t(b.width) * b.rows);
    const double area = double(factor) * factor;
    for (int j = 0; j < b.rows; ++j)
        for (int i = 0; i < b.width; ++i) {
            double s = 0;
            for (int n = 0; n < factor; ++n) s += across[std::size_t(j + n) * b.width + i];
            b.mean[std::size_t(j) * b.width + i] = s / area;
        }
    return b;
}

// Bilinear in the box means at held pixel (x, y): the mean of the held
// views' bilinear samples over the box from there.
double boxed_sample(const BoxedView& b, double x, double y) {
    x = std::clamp(x - b.x0, 0.0, double(b.width - 1));
    y = std::clamp(y - b.y0, 0.0, double(b.rows - 1));
    const int i = std::min(int(x), b.width - 2), j = std::min(int(y), b.rows - 2);
    const double fx = x - i, fy = y - j;
    const double* m = b.mean.data() + std::size_t(j) * b.width + i;
    return (1 - fy) * ((1 - fx) * m[0] + fx * m[1]) + fy * ((1 - fx) * m[b.width] + fx * m[b.width + 1]);
}

// A view block of `width` x `rows` fit pixels, each `factor` held pixels,
// centred on the grid's centre (the tilt axis), the view moved by (across,
// along) of these pixels: content from (i + across, j + along).
void moved_block(const HeldViews& h, const BoxedView& b, int factor, int width, int rows, double across,
                 double along, Eigen::MatrixXd& out, int first_row) {
    const double x0 = (h.width - double(width) * factor) / 2, y0 = (h.rows - double(rows) * factor) / 2;
    for (int j = 0; j < rows; ++j)
        for (int i = 0; i < width; ++i)
            out(first_row + i, j) = boxed_sample(b, x0 + (i + across) * factor, y0 + (j + along) * factor);
}

}  // namespace

MoveViews mover(const HeldViews& h, int factor, int width, int rows) {
    auto boxed = std::make_shared<std::vector<BoxedView>>(h.pixels.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int v = 0; v < int(h.pixels.size()); ++v) (*boxed)[std::size_t(v)] = boxed_view(h, v, factor);
    return [&h, boxed, factor, width, rows](const std::vector<double>& across, const std::vector<double>& along,
                                            bool slopes) {
        const int n = int(across.size());
        MovedSlices m;
        m.data.resize(std::size_t(n) * width, rows);
        if (slopes) m.d_across.resize(m.data.rows(), rows), m.d_along.resize(m.data.rows(), rows);
#pragma omp parallel
        {
            Eigen::MatrixXd plus(width, rows), minus(width, rows);
#pragma omp for schedule(dynamic, 1)
            for (int v = 0; v < n; ++v) {
                const BoxedView& b = (*boxed)[std::size_t(v)];
                moved_block(h, b, factor, width, rows, across[v], along[v], m.data, v * width);
                if (!slopes) continue;
                moved_block(h, b, factor, width, rows, across[v] + kSlopeStep, along[v], plus, 0);
                moved_block(h, b, factor, width, rows, across[v] - kSlopeStep, along[v], minus, 0);
                m.d_across.block(v * width, 0, width, rows) = (plus - minus) / (2 * kSlopeStep);
                moved_block(h, b, factor, width, rows, across[v], along[v] + kSlopeStep, plus, 0);
                moved_block(h, b, factor, width, rows, across[v], along[v] - kSlopeStep, minus, 0);
                m.d_along.block(v * width, 0, width, rows) = (plus - minus) / (2 * kSlopeStep);
            }
        }
        return m;
    };
}

std::vector<float> held_view(const RawFrame& frame, const Transform& offset, const AxisGrid& grid,
                             const GridRect& valid, double sigma, const Device& device) {
    std::vector<float> pixels(std::size_t(grid.width) * grid.rows);
    sample_on_axis_grid(frame, offset, grid, pixels.data(), device);
    ImageF inside(valid.width, valid.height);
    for (int y = 0; y < valid.height; ++y)
        std::copy_n(&pixels[std::size_t(valid.y + y) * grid.width + valid.x], valid.width,
                    &inside.pixels[std::size_t(y) * valid.width]);
    const std::vector<float> s = smoothed(inside, sigma);
    for (int y = 0; y < valid.height; ++y)
        std::copy_n(&s[std::size_t(y) * valid.width], valid.width,
                    &pixels[std::size_t(valid.y + y) * grid.width + valid.x]);
    return pixels;
}

}  // namespace stackalign
