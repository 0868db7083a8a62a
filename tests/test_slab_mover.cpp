// The slab fit's views moved (kernels/slab_mover, pipelines/stages/
// slab_views.hpp): the CPU twin against bilinear arithmetic, the CUDA twin
// against the CPU's bits, and the depth scan's residuals from views moved
// on the GPU against those from views moved on the host.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../kernels/least_squares/least_squares.hpp"
#include "../kernels/slab_mover/slab_mover.hpp"
#include "../pipelines/stages/slab_views.hpp"
#include "../src/alignment/depth_scan.hpp"
#include "../src/alignment/slab_consistency.hpp"
#include "../src/alignment/smooth_errors.hpp"
#include "test_support.hpp"

using namespace stackalign;

namespace {

std::vector<double> series_tilts() {
    std::vector<double> t;
    for (double a = -60; a <= 60; a += 3) t.push_back(a);
    return t;
}

// Box means of `views` views on a 30 x 20 grid of boxes from (-3, -2),
// random where `ramp` is false, else 0.5 + 0.25 x - 0.125 y + v.
BoxedViews some_boxes(int views, bool ramp) {
    BoxedViews b;
    b.views = views, b.factor = 3, b.x0 = -3, b.y0 = -2, b.width = 30, b.rows = 20;
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> value(-1, 1);
    for (int v = 0; v < views; ++v)
        for (int j = 0; j < b.rows; ++j)
            for (int i = 0; i < b.width; ++i)
                b.means.push_back(ramp ? 0.5 + 0.25 * (b.x0 + i) - 0.125 * (b.y0 + j) + v : value(rng));
    return b;
}

// Moves of up to +-`reach` fit pixels, `sets` x `views` across and `views` along.
std::vector<double> some_moves(int n, double reach, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> move(-reach, reach);
    std::vector<double> m(static_cast<std::size_t>(n));
    for (double& x : m) x = move(rng);
    return m;
}

}  // namespace

TEST_CASE("slab mover: a view moved by fractions of a fit pixel reads its box means bilinearly, clamped at their edge") {
    const BoxedViews b = some_boxes(3, true);
    const MovedBlock block{6, 4, 1.5, 2.0};  // fit pixel (i, j) at held (1.5 + 3 i, 2 + 3 j)
    const std::vector<double> across = {0.25, -1.4, 3.0, /* the second set */ 0.0, 0.6, -0.1};
    const std::vector<double> along = {0.5, -0.3, 0.0};
    std::vector<double> out(std::size_t(3) * 6 * 4 * 2);
    move_views(b, block, across, 2, along, out.data(), Device{});
    for (int s = 0; s < 2; ++s)
        for (int v = 0; v < 3; ++v)
            for (int j = 0; j < 4; ++j)
                for (int i = 0; i < 6; ++i) {
                    CAPTURE(s);
                    CAPTURE(v);
                    CAPTURE(i);
                    CAPTURE(j);
                    double x = 1.5 + (i + across[std::size_t(s * 3 + v)]) * 3, y = 2.0 + (j + along[v]) * 3;
                    x = std::clamp(x, double(b.x0), double(b.x0 + b.width - 1));  // the boxes' edge held beyond it
                    y = std::clamp(y, double(b.y0), double(b.y0 + b.rows - 1));
                    const double want = 0.5 + 0.25 * x - 0.125 * y + v;  // bilinear is exact on a ramp
                    CHECK(out[(std::size_t(s) * 4 + j) * 18 + std::size_t(v) * 6 + i] == doctest::Approx(want).epsilon(1e-12));
                }
}

TEST_CASE("slab mover: the CUDA twin moves the views to the CPU's bits, past the boxes' edges too") {
    if (test_support::skip_without_gpu()) return;
    const int views = 5, sets = 3;
    const BoxedViews b = some_boxes(views, false);
    const MovedBlock block{7, 5, 0.5, 1.0};
    const std::vector<double> across = some_moves(sets * views, 4.0, 1), along = some_moves(views, 3.0, 2);
    const std::size_t n = std::size_t(views) * block.width * block.rows * sets;
    std::vector<double> cpu(n), gpu(n, -1.0);
    move_views(b, block, across, sets, along, cpu.data(), Device{});
    move_views(b, block, across, sets, along, gpu.data(), Device{Backend::cuda, 0});
    CHECK(std::memcmp(cpu.data(), gpu.data(), n * sizeof(double)) == 0);
}

TEST_CASE("slab mover: the depth scan's residuals from views moved on the GPU are those of views moved on the host") {
    if (test_support::skip_without_gpu()) return;
    const std::vector<double> tilts = series_tilts();
    const int views = int(tilts.size()), factor = 2, width = 24, rows = 4;
    HeldViews held;
    held.width = 60, held.rows = 14, held.valid = {4, 2, 52, 10};
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> value(0, 1);
    for (int v = 0; v < views; ++v) {
        held.pixels.emplace_back(std::size_t(held.width) * held.rows);
        for (float& p : held.pixels.back()) p = value(rng);
    }
    const Device gpu{Backend::cuda, 0};
    const ViewMoves on_gpu = mover(held, factor, width, rows, gpu);
    REQUIRE(on_gpu.on_gpu.write);
    const ViewMoves on_host(on_gpu.host);  // the same views, moved on the host alone
    const FactorLeastSquares factor_on_gpu = least_squares(gpu);
    const SlabConsistency slab(width, 5, tilts, factor_on_gpu);
    const std::vector<double> across = some_moves(3 * views, 2.0, 4);
    CHECK(residual_sums(slab, on_gpu, across, 3) == residual_sums(slab, on_host, across, 3));
    const DepthChoice g = choose_depth(on_gpu, width, tilts, factor_on_gpu, 3);
    const DepthChoice h = choose_depth(on_host, width, tilts, factor_on_gpu, 3);
    REQUIRE(g.tried.size() >= 8);
    CHECK(g.tried == h.tried);
    CHECK(g.residuals == h.residuals);
    CHECK(g.place == h.place);
}
