#include "slab_views.hpp"

#include <algorithm>
#include <memory>

#include "../../kernels/axis_grid/axis_grid.hpp"
#include "../../kernels/slab_mover/slab_mover.hpp"
#include "../../src/alignment/band_pass.hpp"

namespace stackalign {
namespace {

// Each view's slopes: central differences of this many fit pixels.
constexpr double kSlopeStep = 0.5;

// The held views meaned over factor x factor boxes, the edge of the part
// inside every frame held beyond it: the mean of factor^2 bilinear samples
// a pixel apart (a fit pixel) is then one bilinear sample of it, where it
// had taken most of the depth scan's time at factor 8.
BoxedViews boxed_views(const HeldViews& h, int factor) {
    const GridRect& v = h.valid;
    BoxedViews b;
    b.views = int(h.pixels.size()), b.factor = factor;
    b.x0 = v.x - factor + 1, b.y0 = v.y - factor + 1;
    b.width = v.width + factor - 1, b.rows = v.height + factor - 1;
    const std::size_t per_view = std::size_t(b.width) * b.rows;
    b.means.resize(per_view * b.views);
    const double area = double(factor) * factor;
#pragma omp parallel for schedule(dynamic, 1)
    for (int view = 0; view < b.views; ++view) {
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
        double* mean = b.means.data() + per_view * view;
        for (int j = 0; j < b.rows; ++j)
            for (int i = 0; i < b.width; ++i) {
                double s = 0;
                for (int n = 0; n < factor; ++n) s += across[std::size_t(j + n) * b.width + i];
                mean[std::size_t(j) * b.width + i] = s / area;
            }
    }
    return b;
}

}  // namespace

ViewMoves mover(const HeldViews& h, int factor, int width, int rows, const Device& device) {
    auto boxed = std::make_shared<const BoxedViews>(boxed_views(h, factor));
    const MovedBlock block{width, rows, (h.width - double(width) * factor) / 2, (h.rows - double(rows) * factor) / 2};
    MoveViews on_host = [boxed, block](const std::vector<double>& across, const std::vector<double>& along,
                                       bool slopes) {
        auto moved = [&](const std::vector<double>& a, const std::vector<double>& l) {
            Eigen::MatrixXd out(Eigen::Index(boxed->views) * block.width, block.rows);
            cpu::move_views(*boxed, block, a.data(), 1, l.data(), out.data());
            return out;
        };
        auto shifted = [](std::vector<double> v, double by) {
            for (double& x : v) x += by;
            return v;
        };
        MovedSlices m;
        m.data = moved(across, along);
        if (!slopes) return m;
        m.d_across = (moved(shifted(across, kSlopeStep), along) - moved(shifted(across, -kSlopeStep), along)) /
                     (2 * kSlopeStep);
        m.d_along = (moved(across, shifted(along, kSlopeStep)) - moved(across, shifted(along, -kSlopeStep))) /
                    (2 * kSlopeStep);
        return m;
    };
    if (device.backend != Backend::cuda) return ViewMoves(std::move(on_host));
    // On a GPU the box means are kept there too, for the depth scan's
    // residuals, which then read the moved columns where they are made.
    std::shared_ptr<const cuda::GpuBoxedViews> kept = cuda::keep_boxed_views(*boxed, block, device.gpu);
    MoveViewsOnGpu on_gpu = [kept](const std::vector<double>& across, int sets, const std::vector<double>& along,
                                   double* columns, void* stream) {
        kept->move(across.data(), sets, along.data(), columns, stream);
    };
    return ViewMoves(std::move(on_host), MovesOnGpu{std::move(on_gpu), boxed->views * width, rows});
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
