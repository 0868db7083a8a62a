// A slab's consistency (src/alignment/slab_consistency.hpp) and the smooth
// errors fitted to it (src/alignment/smooth_errors.hpp), and what the stage
// built on them (pipelines/stages/slab_fit.hpp) writes, on views of blobs
// inside a slab projected analytically: a 3D Gaussian's parallel
// projection is a 2D Gaussian about the centre's projection, whatever the
// tilt, so the truth does not come from the projector under test.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <cmath>
#include <omp.h>
#include <random>
#include <tuple>
#include <vector>

#include "../src/alignment/depth_scan.hpp"
#include "../src/alignment/least_squares.hpp"
#include "../src/alignment/slab_consistency.hpp"
#include "../src/alignment/smooth_errors.hpp"
#include "../src/alignment/tilt_geometry.hpp"
#include "../src/core/error.hpp"
#include "../kernels/least_squares/least_squares.hpp"
#include "../pipelines/stages/level_specimen.hpp"
#include "../pipelines/stages/slab_fit.hpp"
#include "../pipelines/stages/slab_views.hpp"
#include "test_support.hpp"

using namespace stackalign;

namespace {

constexpr double kDeg = M_PI / 180;
constexpr int kWidth = 48, kRows = 6, kDepth = 9;
constexpr double kSigma = 2.0;  // smooth against the projector's bilinear cells
const FactorLeastSquares on_cpu = least_squares(Device{});

struct Blob {
    double x, y, z, a;
};

std::vector<double> series_tilts() {
    std::vector<double> t;
    for (double a = -60; a <= 60; a += 3) t.push_back(a);
    return t;
}

// Blobs filling a slab kDepth - 3 px deep and twice the views' width.
std::vector<Blob> slab_blobs() {
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> x(-kWidth, kWidth), y(-1, kRows), z(-(kDepth - 3) / 2.0, (kDepth - 3) / 2.0),
        a(0.5, 1.5);
    std::vector<Blob> b;
    for (int i = 0; i < 400; ++i) b.push_back({x(rng), y(rng), z(rng), a(rng)});
    return b;
}

// The views, each misplaced by (err_across, err_along) and moved back by
// (across, along), as SlabConsistency takes them; slopes by central
// differences of 0.25 px.
MoveViews blob_views(const std::vector<Blob>& blobs, const std::vector<double>& tilts, const std::vector<double>& err_across,
                     const std::vector<double>& err_along) {
    auto view = [=](int v, double da, double dl, Eigen::MatrixXd& out, int first) {
        const double c = std::cos(tilts[v] * kDeg), s = std::sin(tilts[v] * kDeg);
        for (int j = 0; j < kRows; ++j)
            for (int i = 0; i < kWidth; ++i) {
                const double u = i - (kWidth - 1) / 2.0 + da - err_across[v], w = j + dl - err_along[v];
                double sum = 0;
                for (const Blob& b : blobs) {
                    const double du = u - (b.x * c + b.z * s), dw = w - b.y;
                    sum += b.a * std::exp(-(du * du + dw * dw) / (2 * kSigma * kSigma));
                }
                out(first + i, j) = sum;
            }
    };
    return [=](const std::vector<double>& across, const std::vector<double>& along, bool slopes) {
        const int n = int(tilts.size());
        MovedSlices m;
        m.data.resize(n * kWidth, kRows);
        if (slopes) m.d_across.resize(n * kWidth, kRows), m.d_along.resize(n * kWidth, kRows);
        Eigen::MatrixXd p(kWidth, kRows), q(kWidth, kRows);
        for (int v = 0; v < n; ++v) {
            view(v, across[v], along[v], m.data, v * kWidth);
            if (!slopes) continue;
            view(v, across[v] + 0.25, along[v], p, 0), view(v, across[v] - 0.25, along[v], q, 0);
            m.d_across.block(v * kWidth, 0, kWidth, kRows) = (p - q) / 0.5;
            view(v, across[v], along[v] + 0.25, p, 0), view(v, across[v], along[v] - 0.25, q, 0);
            m.d_along.block(v * kWidth, 0, kWidth, kRows) = (p - q) / 0.5;
        }
        return m;
    };
}

double rms(const std::vector<double>& e) {
    double s = 0;
    for (double x : e) s += x * x;
    return std::sqrt(s / double(e.size()));
}

}  // namespace

TEST_CASE("slab consistency: views of a slab fit one; views misplaced by a smooth error do not") {
    const std::vector<double> tilts = series_tilts();
    const std::vector<double> zero(tilts.size(), 0.0);
    std::vector<double> err(tilts.size());
    for (std::size_t k = 0; k < tilts.size(); ++k) err[k] = 0.8 * std::pow(tilts[k] / 60, 4);
    const SlabConsistency slab(kWidth, kDepth, tilts, on_cpu);
    const std::vector<Blob> blobs = slab_blobs();
    const MovedSlices right = blob_views(blobs, tilts, zero, zero)(zero, zero, false);
    const MovedSlices wrong = blob_views(blobs, tilts, err, zero)(zero, zero, false);
    const double consistent = slab.residual(right.data).squaredNorm() / right.data.squaredNorm();
    const double misplaced = slab.residual(wrong.data).squaredNorm() / wrong.data.squaredNorm();
    CHECK(consistent < 1e-4);
    CHECK(misplaced > 1.5 * consistent);  // a smooth error is nearly a slab's own: the fit's whole difficulty
    // A slab too thin for the content explains it worse.
    const SlabConsistency thin(kWidth, 3, tilts, on_cpu);
    CHECK(thin.residual(right.data).squaredNorm() / right.data.squaredNorm() > 20 * consistent);
}

TEST_CASE("slab consistency: the same residual bit for bit whatever the threads") {
    // The factor and the residual are spread over threads by tiles and
    // column groups of fixed sizes; the stage's answer must not depend on
    // how many threads ran it.
    const std::vector<double> tilts = series_tilts();
    const std::vector<double> zero(tilts.size(), 0.0);
    const MovedSlices views = blob_views(slab_blobs(), tilts, zero, zero)(zero, zero, false);
    // 72 columns: more than one of the residual's column groups.
    Eigen::MatrixXd b(views.data.rows(), 12 * views.data.cols());
    for (int k = 0; k < 12; ++k) b.middleCols(k * kRows, kRows) = (k + 1) * views.data;
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const Eigen::MatrixXd serial = SlabConsistency(kWidth, kDepth, tilts, on_cpu).residual(b);
    omp_set_num_threads(3);
    const Eigen::MatrixXd parallel = SlabConsistency(kWidth, kDepth, tilts, on_cpu).residual(b);
    omp_set_num_threads(threads);
    CHECK(serial.cols() == b.cols());
    CHECK((serial - parallel).cwiseAbs().maxCoeff() == 0.0);
    // The sums the depth scan takes are the residual's own, group by group.
    const std::vector<double> sums = SlabConsistency(kWidth, kDepth, tilts, on_cpu).sums_of_squares(b, 2 * kRows);
    REQUIRE(sums.size() == 6);
    for (int g = 0; g < 6; ++g) CHECK(sums[std::size_t(g)] == serial.middleCols(g * 2 * kRows, 2 * kRows).squaredNorm());
    CHECK_THROWS_AS(SlabConsistency(kWidth, kDepth, tilts, on_cpu).sums_of_squares(b, 5), InternalError);
}

TEST_CASE("least squares: a sparse matrix's transpose, each row in the original's order, whatever the threads") {
    std::mt19937 rng(11);
    CompressedSparseRows a;
    a.columns = 37;
    for (int i = 0; i < 101; ++i) {
        for (int c = 0; c < a.columns; ++c)
            if (rng() % 5 == 0) a.column.push_back(c), a.value.push_back(double(rng() % 1000) - 500);
        a.start.push_back(int(a.column.size()));
    }
    a.start.push_back(int(a.column.size()));  // an empty last row
    const Eigen::Map<const Eigen::SparseMatrix<double, Eigen::RowMajor>> m(a.rows(), a.columns, int(a.value.size()),
                                                                          a.start.data(), a.column.data(), a.value.data());
    const Eigen::MatrixXd expected = Eigen::MatrixXd(m).transpose();
    const int threads = omp_get_max_threads();
    for (int t : {1, 4}) {
        omp_set_num_threads(t);
        const CompressedSparseRows at = transposed(a);
        REQUIRE(at.rows() == a.columns);
        REQUIRE(at.columns == a.rows());
        Eigen::MatrixXd got = Eigen::MatrixXd::Zero(at.rows(), at.columns);
        for (int r = 0; r < at.rows(); ++r)
            for (int e = at.start[std::size_t(r)]; e < at.start[std::size_t(r) + 1]; ++e) {
                if (e > at.start[std::size_t(r)]) CHECK(at.column[std::size_t(e)] > at.column[std::size_t(e) - 1]);
                got(r, at.column[std::size_t(e)]) = at.value[std::size_t(e)];
            }
        CHECK(got == expected);
    }
    omp_set_num_threads(threads);
}

TEST_CASE("slab consistency: the residual is the regularised least-squares fit's, solved whole") {
    // The residual is solved in the cells' even and odd halves under the
    // support's half turn; a direct solve of the whole normal equations
    // must agree, for an odd and an even number of cells and for tilts
    // that are not symmetric about zero.
    std::vector<double> uneven;
    for (double a = -48; a <= 66; a += 6) uneven.push_back(a);
    int odd_cells = 0;
    for (const auto& [width, depth, tilts] :
         {std::tuple{20, 5, series_tilts()}, std::tuple{21, 4, uneven}, std::tuple{17, 7, uneven}}) {
        const SlabConsistency slab(width, depth, tilts, on_cpu);
        const Eigen::MatrixXd p = slab.projector();
        Eigen::MatrixXd a = p.transpose() * p;
        a.diagonal().array() += 1e-3 * a.diagonal().mean();
        std::mt19937 rng(3);
        std::normal_distribution<double> g;
        Eigen::MatrixXd b(p.rows(), 5);
        for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = g(rng);
        Eigen::VectorXd slab_cells(p.cols());
        for (Eigen::Index i = 0; i < slab_cells.size(); ++i) slab_cells[i] = 1 + g(rng) * g(rng);
        b.col(4) = p * slab_cells;  // one slab's views: nearly all explained
        const Eigen::MatrixXd direct = b - p * a.ldlt().solve(p.transpose() * b);
        odd_cells += slab.unknowns() % 2;
        CHECK((slab.residual(b) - direct).cwiseAbs().maxCoeff() < 1e-9 * b.cwiseAbs().maxCoeff());
        CHECK(direct.col(4).norm() < 0.01 * b.col(4).norm());
    }
    CHECK(odd_cells == 1);  // the cell that is its own twin is met
}

TEST_CASE("slab consistency: the CUDA twin's residual is the CPU's to rounding, and so are the errors fitted to it") {
    // The twins factor and solve in other orders (cuSOLVER on the GPU), so
    // they agree to rounding, not bit for bit: what the stage writes (px to
    // four decimals) is the same.
    const std::vector<double> tilts = series_tilts();
    const std::vector<double> zero(tilts.size(), 0.0);
    std::vector<double> err(tilts.size());
    for (std::size_t k = 0; k < tilts.size(); ++k) err[k] = 0.8 * std::pow(tilts[k] / 60, 4) + 0.4 * std::tan(tilts[k] * kDeg);
    err = less_object_place(err, tilts);
    const MoveViews move = blob_views(slab_blobs(), tilts, err, zero);
    const SlabConsistency cpu_slab(kWidth, kDepth, tilts, on_cpu);
    const SmoothErrorFit fc = fit_smooth_errors(cpu_slab, move, tilts, zero, zero, 6, 2, 3);
    REQUIRE(fc.residual_after < 0.5 * fc.residual_before);  // a fit that moves the views, to compare
    if (test_support::skip_without_gpu()) return;
    const FactorLeastSquares on_gpu = least_squares(Device{Backend::cuda, 0});
    const Eigen::MatrixXd b = move(zero, zero, false).data;
    for (int depth : {kDepth, 12}) {
        CAPTURE(depth);
        const Eigen::MatrixXd rc = SlabConsistency(kWidth, depth, tilts, on_cpu).residual(b);
        const Eigen::MatrixXd rg = SlabConsistency(kWidth, depth, tilts, on_gpu).residual(b);
        CHECK((rc - rg).cwiseAbs().maxCoeff() < 1e-10 * b.cwiseAbs().maxCoeff());
        CHECK(rc.squaredNorm() > 1e-6 * b.squaredNorm());  // the error leaves something to compare
        // The sums the GPU reduces without sending the residual back.
        const std::vector<double> sg = SlabConsistency(kWidth, depth, tilts, on_gpu).sums_of_squares(b, kRows / 2);
        REQUIRE(sg.size() == 2);
        for (int g = 0; g < 2; ++g) {
            const double sc = rc.middleCols(g * kRows / 2, kRows / 2).squaredNorm();
            CHECK(std::fabs(sg[std::size_t(g)] - sc) < 1e-10 * sc);
        }
    }
    const SmoothErrorFit fg = fit_smooth_errors(SlabConsistency(kWidth, kDepth, tilts, on_gpu), move, tilts, zero, zero, 6, 2, 3);
    for (std::size_t k = 0; k < tilts.size(); ++k) {
        CHECK(std::fabs(fc.across[k] - fg.across[k]) < 1e-9);
        CHECK(std::fabs(fc.along[k] - fg.along[k]) < 1e-9);
    }
}

TEST_CASE("slab depth: the scan's supports built ahead of it, on threads of their own, give its answer to the bit") {
    const std::vector<double> tilts = series_tilts();
    const std::vector<double> zero(tilts.size(), 0.0);
    std::vector<Blob> blobs = slab_blobs();
    blobs.resize(120);  // fewer blobs: the scan moves the views a few hundred times
    const MoveViews move = blob_views(blobs, tilts, zero, zero);
    const int width = 24;  // the views' middle half: depths 2 .. 12
    const MoveViews middle = [&](const std::vector<double>& a, const std::vector<double>& l, bool slopes) {
        MovedSlices m = move(a, l, slopes), out;
        out.data.resize(Eigen::Index(tilts.size()) * width, kRows);
        for (std::size_t v = 0; v < tilts.size(); ++v)
            out.data.middleRows(Eigen::Index(v) * width, width) = m.data.middleRows(Eigen::Index(v) * kWidth + width / 2, width);
        return out;
    };
    const DepthChoice one = choose_depth(middle, width, tilts, on_cpu, 0);
    REQUIRE(one.tried.size() >= 8);
    for (int ahead : {1, 3}) {
        CAPTURE(ahead);
        const DepthChoice built_ahead = choose_depth(middle, width, tilts, on_cpu, ahead);
        CHECK(built_ahead.tried == one.tried);
        CHECK(built_ahead.residuals == one.residuals);
        CHECK(built_ahead.depth == one.depth);
        CHECK(built_ahead.place == one.place);
    }
    if (test_support::skip_without_gpu()) return;
    // The GPU's residuals are the CPU's to rounding (above).
    const DepthChoice on_gpu = choose_depth(middle, width, tilts, least_squares(Device{Backend::cuda, 0}), 3);
    CHECK(on_gpu.tried == one.tried);
    CHECK(on_gpu.depth == one.depth);
    CHECK(on_gpu.place == doctest::Approx(one.place).epsilon(1e-9));
    for (std::size_t k = 0; k < one.residuals.size(); ++k)
        CHECK(std::fabs(on_gpu.residuals[k] - one.residuals[k]) < 1e-9 * one.residuals[k]);
}

TEST_CASE("slab consistency: too small a slab is an input error that says its size") {
    CHECK_THROWS_WITH_AS(SlabConsistency(1, 4, series_tilts(), on_cpu), doctest::Contains("1 px across"), InputError);
}

TEST_CASE("smooth errors: a slab's smooth misplacement across and along the axis is found, up to the object's place") {
    const std::vector<double> tilts = series_tilts();
    const std::vector<double> zero(tilts.size(), 0.0);
    std::vector<double> across(tilts.size()), along(tilts.size());
    for (std::size_t k = 0; k < tilts.size(); ++k) {
        const double t = tilts[k] * kDeg;
        across[k] = 1.5 * std::tan(t) + 0.6 * std::pow(tilts[k] / 60, 4);
        along[k] = -0.8 * (1 - std::cos(t));
    }
    // Its part the object's own place explains (c + a cos t + b sin t) would
    // move the content out of the slab's support, which the stage places
    // first (depth_by_consistency, below); here the error has none.
    across = less_object_place(across, tilts);
    const SlabConsistency slab(kWidth, kDepth, tilts, on_cpu);
    const MoveViews move = blob_views(slab_blobs(), tilts, across, along);
    const SmoothErrorFit fit = fit_smooth_errors(slab, move, tilts, zero, zero, 6, 4, 4);
    CHECK(fit.residual_after < 0.1 * fit.residual_before);
    // Left after the fit: the error less the correction, less what no
    // consistency tells (c + a cos t + b sin t across, a constant along).
    std::vector<double> left_across(tilts.size()), left_along(tilts.size());
    double mean_along = 0;
    for (std::size_t k = 0; k < tilts.size(); ++k) mean_along += (along[k] - fit.along[k]) / double(tilts.size());
    for (std::size_t k = 0; k < tilts.size(); ++k) {
        left_across[k] = across[k] - fit.across[k];
        left_along[k] = along[k] - fit.along[k] - mean_along;
    }
    const double before = rms(less_object_place(across, tilts));
    INFO("across before " << before << ", after " << rms(less_object_place(left_across, tilts)) << "; along after "
                          << rms(left_along));
    CHECK(before > 0.2);
    CHECK(rms(less_object_place(left_across, tilts)) < 0.03);  // the projector against analytic blobs: 0.022 left
    CHECK(rms(left_along) < 0.02);
}

TEST_CASE("smooth errors: the content's depth is found by where the slab explains it") {
    const std::vector<double> tilts = series_tilts();
    const std::vector<double> zero(tilts.size(), 0.0);
    std::vector<Blob> blobs = slab_blobs();
    for (Blob& b : blobs) b.z += 2.5;  // the content 2.5 px off the axis's depth
    const SlabConsistency slab(kWidth, kDepth, tilts, on_cpu);
    const MoveViews views = blob_views(blobs, tilts, zero, zero);
    const double z = depth_by_consistency(slab, views, tilts, zero, 4);
    // Moving every view by z sin t moves the object by -z in depth.
    CHECK(z == doctest::Approx(2.5).epsilon(0.1));
    // Sought from a place 3 px off on either side, outwards, it comes to
    // the same valley's floor.
    for (double near : {-0.5, 5.5}) {
        CAPTURE(near);
        CHECK(depth_by_consistency(slab, views, tilts, zero, 8, near) == doctest::Approx(z).epsilon(1e-9));
    }
}

// Residual curves the stage met (the supports' depths in coarse px, the
// residuals in units of their scale): the bench's 512-px wide slab at 1000
// photons and without noise, and the thin slab of test_tilt_axis.cpp,
// whose residual falls as steeply past its knee as before it.
TEST_CASE("slab depth: the knee is taken where the residual then flattens or only scatters, not where it still falls") {
    const std::vector<int> coarse = {2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 21, 24, 28};
    const std::vector<double> noisy = {1969, 1118, 657.5, 383, 215.6, 116.9, 61.9, 32.66,
                                       18.92, 7.874, 6.108, 7.313, 6.516, 4.167, 5.042, 3.351};
    const std::vector<double> noiseless = {1968.2, 1114.9, 654.2, 379.4, 212.2, 113.7, 58.86, 29.70,
                                           16.06, 5.196, 3.553, 4.869, 4.169, 1.903, 2.889, 1.348};
    CHECK(depth_knee(coarse, noisy) == 9);      // 12 coarse px: the box's 102 frame px at 8 a pixel
    CHECK(depth_knee(coarse, noiseless) == 9);  // to 0.26 of the knee's past it, against 380 times before
    const std::vector<int> px = {8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 56, 64, 72, 84, 96, 112};
    const std::vector<double> thin = {285.4, 252.6, 234.8, 218.1, 194.8, 161.7, 125.5, 91.37,
                                      64.65, 34.33, 22.39, 18.07, 15.98, 12.98, 9.089, 3.936};
    CHECK(depth_knee(px, thin) == kNoKnee);
    // Still falling steeply at the deepest: no knee at all.
    std::vector<double> falling;
    for (int d : coarse) falling.push_back(std::exp(-0.5 * d));
    CHECK(depth_knee(coarse, falling) == kNoKnee);
}

// The bench's series over +-70 degrees at 1000 photons (256 px, 71 views;
// supports in px, residuals in units of 1e5): an 8-px slab and one thin
// layer, whose content the thinnest support already holds, fall slowly and
// a little, each deeper px adding freedom, with a "knee" the line rule
// finds in that fall (48 and 40 px): no depth shows, and choose_depth
// takes the thinnest support. The wide slab at 100 photons falls 28 times
// to its knee at 40 px and is fitted there.
TEST_CASE("slab depth: content the thinnest support holds shows no depth, however the slow fall bends") {
    const std::vector<int> px = {8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 56, 64, 72, 84, 96, 112};
    const std::vector<double> thin_slab = {322.2, 277.5, 246.6, 292.9, 218.5, 208.5, 194.0, 188.1,
                                           176.8, 164.4, 156.7, 149.7, 144.7, 133.9, 127.0, 173.0};
    const std::vector<double> one_layer = {20.68, 15.77, 14.38, 9.822, 11.01, 8.106, 7.391, 7.080,
                                           6.070, 5.436, 4.634, 3.765, 3.313, 2.875, 2.423};
    const std::vector<int> px_layer(px.begin(), px.begin() + 15);
    CHECK(depth_knee(px, thin_slab) == kNoFall);
    CHECK(depth_knee(px_layer, one_layer) == kNoFall);
    const std::vector<double> wide_at_100 = {423000, 239000, 142000, 85800, 51300, 32600, 22700, 17400,
                                             14900, 13600, 13400, 12800, 12300, 11800, 11300, 10800};
    CHECK(depth_knee(px, wide_at_100) == 8);
}

// The fit's slab lies in the plane of the angles read, and a whole
// object's offset only turns it: where "auto"'s estimate had moved the
// angles, those read are what the outputs get back (.tlt, shifts.csv's
// tilt, run.json), and the estimate is kept apart; a number the config
// gives is the user's word and stays.
TEST_CASE("tilt offset: where a later stage sets \"auto\"'s offset aside, the angles written are those read") {
    StackPlan plan;
    plan.angles = {-60 + 8.5, 0 + 8.5, 60 + 8.5};
    plan.tilt_offset = 8.5, plan.tilt_offset_auto = true, plan.tilt_offset_error = 1.9;
    std::vector<FrameResult> results(3);
    for (std::size_t k = 0; k < 3; ++k) results[k].tilt = plan.angles[k];

    StackPlan given = plan, by_tracks = plan;
    given.tilt_offset_auto = false;  // the config's number: the user's word, kept
    std::vector<FrameResult> unchanged = results;
    take_angles_as_read(given, unchanged, "the slab fit ran", Verbosity::quiet);
    CHECK(given.angles[0] == doctest::Approx(-51.5));
    CHECK(unchanged[0].tilt == doctest::Approx(-51.5));
    CHECK(given.angles_as_read_why.empty());

    take_angles_as_read(plan, results, "the slab fit ran", Verbosity::quiet);
    CHECK(plan.angles == std::vector<double>{-60, 0, 60});
    for (std::size_t k = 0; k < 3; ++k) CHECK(results[k].tilt == doctest::Approx(plan.angles[k]));
    CHECK(plan.tilt_offset == 0);
    CHECK_FALSE(plan.tilt_offset_auto);
    CHECK(plan.pairs_tilt_offset == 8.5);
    CHECK(plan.angles_as_read_why == "the slab fit ran");

    // The tracks' levelling offset on what then proves a whole object.
    by_tracks.tilt_offset_auto = false, by_tracks.tilt_offset_levelled_by = StackPlan::LevelledBy::tracks, by_tracks.pairs_tilt_offset = 3;
    std::vector<FrameResult> levelled = unchanged;
    take_angles_as_read(by_tracks, levelled, "a whole object", Verbosity::quiet);
    CHECK(by_tracks.angles == std::vector<double>{-60, 0, 60});
    CHECK(by_tracks.tilt_offset == 0);
    CHECK_FALSE(by_tracks.tilt_offset_levelled());
    CHECK(by_tracks.pairs_tilt_offset == 3);
}

// Content that fills a slab's depth has no plane: where the slab fit
// found that depth at its residual's knee, no reconstruction is asked to
// lay it level; where the fit ran in its thinnest support (thin content
// under noise) or did not run, one still is.
TEST_CASE("tilt offset: no reconstruction lays level a slab whose depth the slab fit found filled") {
    const SlabFit not_run;
    CHECK(why_not_level_by_reconstruction(not_run).empty());
    SlabFit thin;
    thin.ran = true, thin.depth_chosen_by = "thinnest", thin.thickness_px = 10;
    CHECK(why_not_level_by_reconstruction(thin).empty());
    SlabFit thick = thin;
    thick.depth_chosen_by = "knee", thick.thickness_px = 50;
    CHECK(why_not_level_by_reconstruction(thick).find("a slab 50 px deep") != std::string::npos);
}

TEST_CASE("slab fit's views: jittered by fractions of a pixel and sampled back, smoothed views fit one slab where they are") {
    // Frames of sharp blobs (sigma 0.45 px) in a slab twice the views
    // width, each view shifted by its own sub-pixel jitter and sampled back
    // at it, held 2 to a fit pixel as on a 256-px series. The truth is
    // every view in place: the fit should move none. Unsmoothed, how far a
    // sample falls between pixels blurs each view by its own amount, and
    // the fit trades its shapes against that (over seeds 11-14 of this
    // test: 0.029-0.072 px unsmoothed, 2.2-4.3 times the smoothed).
    const std::vector<double> tilts = series_tilts();
    const int n = int(tilts.size()), W = 96, H = 24, factor = 2;
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> bx(-W, W), by(-2, H + 2), bz(-5, 5), ba(0.5, 1.5), jitter(-1, 1);
    std::vector<Blob> blobs;
    for (int i = 0; i < 2500; ++i) blobs.push_back({bx(rng), by(rng), bz(rng), ba(rng)});
    std::vector<RawFrame> frames;
    std::vector<Transform> offsets;
    for (int v = 0; v < n; ++v) {
        const double c = std::cos(tilts[v] * kDeg), s = std::sin(tilts[v] * kDeg), jx = jitter(rng), jy = jitter(rng);
        std::vector<double> px(std::size_t(W) * H, 0.0);
        for (const Blob& b : blobs) {
            const double u = (W - 1) / 2.0 + b.x * c + b.z * s + jx, w = (H - 1) / 2.0 + b.y + jy;
            for (int j = std::max(0, int(w) - 4); j <= std::min(H - 1, int(w) + 5); ++j)
                for (int i = std::max(0, int(u) - 4); i <= std::min(W - 1, int(u) + 5); ++i)
                    px[std::size_t(j) * W + i] += b.a * std::exp(-((i - u) * (i - u) + (j - w) * (j - w)) / (2 * 0.45 * 0.45));
        }
        frames.push_back(test_support::frame_of(PixelType::f32, W, H, px));
        offsets.push_back(Transform::translation(jx, jy));  // reference content X lies at X + jitter in the frame
    }
    const AxisGrid grid = axis_grid(W, H, 0, 1);
    HeldViews held;
    held.width = grid.width, held.rows = grid.rows, held.valid = covered_rect(grid, offsets);
    const int width = held.valid.width / factor, rows = held.valid.height / factor;
    const SlabConsistency slab(width, 7, tilts, on_cpu);
    const std::vector<double> zero(tilts.size(), 0.0);
    auto moved_by_fit = [&](double sigma) {
        held.pixels.clear();
        for (int v = 0; v < n; ++v) held.pixels.push_back(held_view(frames[v], offsets[v], grid, held.valid, sigma, Device{}));
        const SmoothErrorFit fit = fit_smooth_errors(slab, mover(held, factor, width, rows, Device{}), tilts, zero, zero, 6, 0, 3);
        return rms(fit.across) * factor;  // frame px
    };
    const double smoothed = moved_by_fit(0.5 * factor), sharp = moved_by_fit(1e-3);
    INFO("the fit moved the views " << sharp << " px RMS unsmoothed, " << smoothed << " smoothed");
    CHECK(smoothed < 0.04);
    CHECK(sharp > 2 * smoothed);
}

TEST_CASE("smooth errors: the views beyond a tilt each free beside the shapes, and none of them within it") {
    std::vector<double> tilts;
    for (int k = 0; k <= 70; ++k) tilts.push_back(-70.0 + 2.0 * k);
    const Eigen::MatrixXd plain = across_error_shapes(tilts, 6), freed = across_error_shapes(tilts, 6, 64.0);
    REQUIRE(plain.cols() == 6);
    REQUIRE(freed.cols() == 12);  // 66, 68 and 70 degrees either side
    // A move of the last view alone (less the object's place): the freed
    // shapes hold it, the plain ones do not; one within 64 degrees neither.
    auto left_out = [&](const Eigen::MatrixXd& shapes, int view) {
        std::vector<double> move(tilts.size(), 0.0);
        move[std::size_t(view)] = 1.0;
        const std::vector<double> m = less_object_place(move, tilts);
        const Eigen::VectorXd e = Eigen::Map<const Eigen::VectorXd>(m.data(), Eigen::Index(m.size()));
        const Eigen::VectorXd fitted = shapes * shapes.colPivHouseholderQr().solve(e);
        return (e - fitted).norm() / e.norm();
    };
    CHECK(left_out(freed, 70) < 1e-9);
    CHECK(left_out(plain, 70) > 0.3);
    CHECK(left_out(freed, 60) > 0.3);
}
