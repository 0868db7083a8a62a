// The views' across-axis corrections from patch tracks
// (src/alignment/across_tracks.hpp), on tracks made from known points whose
// depth drifts along the series, as a thick specimen's patches do.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>
#include <vector>

#include "../src/alignment/across_tracks.hpp"
#include "../src/alignment/track_segments.hpp"
#include "../src/core/error.hpp"

using namespace stackalign;

namespace {

constexpr double kDeg = M_PI / 180;

std::vector<double> series_tilts() {
    std::vector<double> t;
    for (double a = -60; a <= 60; a += 2) t.push_back(a);
    return t;
}

// e less its least-squares c + a cos t + b sin t: what no track can tell.
std::vector<double> without_gauge(const std::vector<double>& e, const std::vector<double>& tilts) {
    Eigen::MatrixXd basis(e.size(), 3);
    for (std::size_t i = 0; i < e.size(); ++i) basis.row(i) << 1, std::cos(tilts[i] * kDeg), std::sin(tilts[i] * kDeg);
    const Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(e.data(), Eigen::Index(e.size()));
    const Eigen::VectorXd left = v - basis * basis.colPivHouseholderQr().solve(v);
    return {left.data(), left.data() + left.size()};
}

// 99 tracks of points 20 px apart across the axis, each at a depth that
// drifts by up to 0.03 px a degree (its content's depths weigh differently
// as the views turn), seen through views misplaced across the axis by `e`,
// with 0.02 px of noise; the reference view holds each start itself.
PatchTracks tracks_of(const std::vector<double>& tilts, const std::vector<double>& e) {
    PatchTracks t;
    t.width = 241, t.height = 121, t.patch_px = 32;
    const double cx = (t.width - 1) / 2.0, cy = (t.height - 1) / 2.0;
    const int n = int(tilts.size()), reference = n / 2;
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> depth(-20, 20), drift(-0.03, 0.03);
    std::normal_distribution<double> noise(0, 0.02);
    for (int j = -4; j <= 4; ++j)
        for (int i = -5; i <= 5; ++i) {
            const double x = 20.0 * i, z0 = depth(rng), dz = drift(rng);
            std::vector<double> tx(n), ty(n);
            for (int k = 0; k < n; ++k) {
                const double z = z0 + dz * tilts[k];
                tx[k] = cx + x * std::cos(tilts[k] * kDeg) + z * std::sin(tilts[k] * kDeg) + e[k] - e[reference] +
                        (k == reference ? 0.0 : noise(rng));
                ty[k] = cy + 12.0 * j;
            }
            t.x.push_back(tx), t.y.push_back(ty);
        }
    return t;
}

double rms_difference(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
    return std::sqrt(s / double(a.size()));
}

}  // namespace

TEST_CASE("across tracks: the views' misplacement across the axis is found, up to the object's own place") {
    const std::vector<double> tilts = series_tilts();
    const int n = int(tilts.size());
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> jitter(-0.1, 0.1);
    std::vector<double> e(n);
    for (int k = 0; k < n; ++k) e[k] = 0.5 * std::sin(4 * tilts[k] * kDeg) + jitter(rng);
    const std::vector<double> seen = without_gauge(e, tilts);
    REQUIRE(rms_difference(seen, std::vector<double>(n, 0.0)) > 0.2);
    const AcrossCorrection a = across_correction_from_tracks(tracks_of(tilts, e), tilts, n / 2);
    CHECK(a.tracks == 99);
    CHECK(rms_difference(a.across_px, seen) < 0.03);
    for (double s : a.across_error_px) CHECK(s < 0.03);
}

TEST_CASE("across tracks: an error the object's own place explains is no correction") {
    const std::vector<double> tilts = series_tilts();
    std::vector<double> e;
    for (double t : tilts) e.push_back(1.0 + 2.0 * std::cos(t * kDeg) - 3.0 * std::sin(t * kDeg));
    const AcrossCorrection a = across_correction_from_tracks(tracks_of(tilts, e), tilts, int(tilts.size()) / 2);
    CHECK(rms_difference(a.across_px, std::vector<double>(tilts.size(), 0.0)) < 0.01);
}

TEST_CASE("across tracks: a segment spans 20 degrees whatever the steps") {
    CHECK(across_segment_views(series_tilts()) == 10);
    std::vector<double> fine, coarse;
    for (double a = -60; a <= 60; a += 1) fine.push_back(a);
    for (double a = -66; a <= 66; a += 3) coarse.push_back(a);
    CHECK(across_segment_views(fine) == 20);
    CHECK(across_segment_views(coarse) == 7);
    CHECK(across_segment_views({-60, -30, 0, 30, 60}) == 6);  // never fewer than 6
}

TEST_CASE("track segments: half-overlapping windows, every view in one, the last reaching the end") {
    using W = std::vector<std::pair<int, int>>;
    CHECK(segment_windows(10, 4) == W{{0, 4}, {2, 6}, {4, 8}, {6, 10}});
    CHECK(segment_windows(11, 4) == W{{0, 4}, {2, 6}, {4, 8}, {6, 10}, {8, 11}});
    CHECK(segment_windows(5, 20) == W{{0, 5}});
    CHECK(segment_windows(7, 3) == W{{0, 3}, {1, 4}, {2, 5}, {3, 6}, {4, 7}});
    for (int n : {3, 17, 71, 121})
        for (int views : {3, 6, 10, 20}) {
            const W w = segment_windows(n, views);
            std::vector<int> cover(std::size_t(n), 0);
            for (const auto& [first, last] : w) {
                CHECK(last - first <= views);
                for (int i = first; i < last; ++i) ++cover[std::size_t(i)];
            }
            CHECK(w.back().second == n);
            for (int c : cover) CHECK(c >= 1);
        }
}

TEST_CASE("across tracks: too few tracks is an error that says how many") {
    const std::vector<double> tilts = series_tilts();
    PatchTracks t = tracks_of(tilts, std::vector<double>(tilts.size(), 0.0));
    t.x.resize(3), t.y.resize(3);
    CHECK_THROWS_WITH_AS(across_correction_from_tracks(t, tilts, int(tilts.size()) / 2),
                         doctest::Contains("3 patches"), InputError);
}
