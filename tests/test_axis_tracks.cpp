// The tilt axis's fit to patch tracks (src/alignment/axis_tracks.hpp), on
// tracks made from known points, so the fit alone is under test.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "../src/alignment/axis_tracks.hpp"
#include "../src/alignment/track_groups.hpp"

using namespace stackalign;

namespace {

constexpr double kDeg = M_PI / 180;

struct Series {
    std::vector<double> tilts;
    double delta_deg = 0;  // the grid's axis less the true one
    double scale = 0;      // each view's along-axis scale: 1 + up to this, at random
    // Per column of starts (11, left to right): a turn, degrees, that its
    // tracks' along-axis places follow beside the axis's own: an error the
    // neighbouring patches share (the same feature, the same depths).
    std::vector<double> column_turn_deg;
};

// Tracks of points on a grid of starts symmetric about the grid's centre,
// 20 px apart across the axis and 12 along, each at a random depth, seen
// through views with their own along-axis offsets and scale. `kept(u, v)`:
// whether the patch that starts at (u, v) from the centre could be
// followed (else only its start is known, as track_patches leaves it).
template <class Kept>
PatchTracks tracks_of(const Series& s, Kept kept) {
    PatchTracks t;
    t.width = 241, t.height = 121, t.patch_px = 32;
    const double cx = (t.width - 1) / 2.0, cy = (t.height - 1) / 2.0;
    const int n = int(s.tilts.size()), reference = n / 2;
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> depth(-8, 8), offset(-1, 1);
    std::vector<double> b(n), m(n);
    for (double& x : b) x = offset(rng);
    for (double& x : m) x = 1 + s.scale * offset(rng);
    const double d = std::sin(s.delta_deg * kDeg);
    for (int j = -4; j <= 4; ++j)
        for (int i = -5; i <= 5; ++i) {
            // The patch starting at (x, 12 j) on the turned grid shows a
            // point that far along the true axis.
            const double shared = s.column_turn_deg.empty() ? 0.0 : std::sin(s.column_turn_deg[i + 5] * kDeg);
            const double x = 20.0 * i, y = 12.0 * j + (d + shared) * x, z = depth(rng);
            std::vector<double> tx(n, NAN), ty(n, NAN);
            for (int k = 0; k < n; ++k) {
                if (k != reference && !kept(x, 12.0 * j)) continue;
                const double c = std::cos(s.tilts[k] * kDeg), sn = std::sin(s.tilts[k] * kDeg);
                const double u = x * c + z * sn;
                const double v = y * m[k] / m[reference] + b[k] - b[reference];
                tx[k] = cx + u;
                ty[k] = cy + v - (d + shared) * u;
            }
            // The reference view holds the start itself.
            tx[reference] = cx + x, ty[reference] = cy + 12.0 * j;
            t.x.push_back(tx), t.y.push_back(ty);
        }
    return t;
}

Series slab_series(double delta_deg, double scale) {
    Series s;
    for (double a = -60; a <= 60; a += 3) s.tilts.push_back(a);
    s.delta_deg = delta_deg, s.scale = scale;
    return s;
}

}  // namespace

TEST_CASE("axis tracks: a wrong axis is found from the tracks' along-axis places") {
    for (double delta : {0.0, 0.7, -1.5}) {
        CAPTURE(delta);
        const Series s = slab_series(delta, 0.0);
        const AxisCorrection c = axis_correction_from_tracks(tracks_of(s, [](double, double) { return true; }), 20);
        CHECK(std::fabs(c.delta_deg - delta) < 0.01);
        CHECK(c.tracks == 99);
        CHECK(c.residual_px < 0.05);
    }
}

// Content that fills a slab's depth keeps its along-axis places over
// shorter segments (axis_by_tracks.cpp): on tracks of fixed points any
// segment length finds the same axis, and the views' along-axis offsets.
TEST_CASE("axis tracks: segments of 10 views find what segments of 20 do on tracks of fixed points") {
    const Series s = slab_series(0.7, 0.0);
    const PatchTracks t = tracks_of(s, [](double, double) { return true; });
    const AxisCorrection twenty = axis_correction_from_tracks(t, 20, 20), ten = axis_correction_from_tracks(t, 20, 10);
    CHECK(std::fabs(ten.delta_deg - 0.7) < 0.01);
    CHECK(ten.delta_deg == doctest::Approx(twenty.delta_deg).epsilon(1e-3));
    REQUIRE(ten.along_px.size() == twenty.along_px.size());
    for (std::size_t k = 0; k < ten.along_px.size(); ++k) CHECK(ten.along_px[k] == doctest::Approx(twenty.along_px[k]).scale(1).epsilon(0.01));
    CHECK_THROWS_AS(axis_correction_from_tracks(t, 20, 2), std::invalid_argument);
}

// Views scaled along the axis, each by its own amount (a microscope's
// magnification wanders through a series; a slab's views scale with the
// tilt, +0.44 % at -30 degrees and -0.48 % at +30 on the bench's slab,
// docs/tomography.md), move every track along the axis in proportion to its
// place along it. Where the tracks' places along and across the axis are
// correlated, as where a frame's short sides lie oblique to the axis and
// end tracks there, that reads as a turn of the axis: 0.03 degrees here
// with every followed track fitted, 0.2 at 80 and 84 degrees on the
// bench's slab. Fitting only the places whose mirror image along the axis
// was followed in the same view leaves them uncorrelated.
TEST_CASE("axis tracks: views scaled along the axis leave it, also where oblique frame ends cut the tracks off") {
    const double delta = 0.4, scale = 0.005;
    // The frame's ends along the axis, oblique to it: a patch starting
    // beyond them is not followed.
    auto oblique_ends = [](double u, double v) { return std::fabs(v + 0.35 * u) <= 45; };
    auto all = [](double, double) { return true; };
    const Series s = slab_series(delta, scale);
    const AxisCorrection whole = axis_correction_from_tracks(tracks_of(s, all), 20);
    const AxisCorrection cut = axis_correction_from_tracks(tracks_of(s, oblique_ends), 20);
    MESSAGE("axis error: every track " << whole.delta_deg - delta << ", ends oblique " << cut.delta_deg - delta
                                       << " degrees (" << cut.tracks << " tracks)");
    CHECK(std::fabs(whole.delta_deg - delta) < 0.005);
    CHECK(std::fabs(cut.delta_deg - delta) < 0.005);
    CHECK(cut.tracks < whole.tracks);
}

// Where neighbouring patches share their error, the estimate's error is
// the mean of a few columns' errors, not of 99 tracks'. Over many such
// series the stated errors should be the spread of the estimate's.
TEST_CASE("axis tracks: the stated error covers an error that neighbouring tracks share") {
    const int series = 60;
    double sum_z2 = 0, sum_off2 = 0;
    int within = 0;
    std::mt19937 rng(11);
    std::normal_distribution<double> turn(0.0, 0.4);
    for (int k = 0; k < series; ++k) {
        Series s = slab_series(0.4, 0.0);
        for (int i = 0; i < 11; ++i) s.column_turn_deg.push_back(turn(rng));
        const AxisCorrection c = axis_correction_from_tracks(tracks_of(s, [](double, double) { return true; }), 20);
        const double off = c.delta_deg - s.delta_deg;
        sum_off2 += off * off, sum_z2 += off * off / (c.standard_error * c.standard_error);
        within += std::fabs(off) < 2 * c.standard_error;
    }
    const double rms_z = std::sqrt(sum_z2 / series);
    MESSAGE("axis off by " << std::sqrt(sum_off2 / series) << " degrees RMS; off / stated error " << rms_z
                           << " RMS; within 2 stated errors " << within << " of " << series);
    CHECK(std::sqrt(sum_off2 / series) > 0.05);  // the shared errors do move it
    CHECK(rms_z < 1.5);
    CHECK(within >= 0.85 * series);
}

TEST_CASE("axis tracks: jackknife groups are columns of neighbouring tracks") {
    const PatchTracks t = tracks_of(slab_series(0.0, 0.0), [](double, double) { return true; });
    auto start = [](int i, int j) { return (j + 4) * 11 + (i + 5); };  // tracks_of's order
    std::vector<bool> counted(t.x.size(), true);
    counted[start(0, 0)] = false;
    const TrackGroups g = track_groups(t, 20, counted, 20);
    CHECK(g.count == 11);  // a column each
    CHECK(g.of[start(0, 0)] == -1);
    for (int j = -4; j <= 4; ++j) {
        CHECK(g.of[start(-5, j)] == 0);
        CHECK(g.of[start(5, j)] == 10);
    }
    // More columns than groups: neighbouring ones merged, in order.
    const TrackGroups g4 = track_groups(t, 20, counted, 4);
    CHECK(g4.count == 4);
    for (int i = -5; i < 5; ++i) CHECK(g4.of[start(i + 1, 1)] >= g4.of[start(i, 1)]);
    CHECK(g4.of[start(-5, 1)] == 0);
    CHECK(g4.of[start(5, 1)] == 3);
    // Tracks in fewer than 4 columns: blocks of tracks, one a group here,
    // none empty.
    std::vector<bool> few(t.x.size(), false);
    for (int p : {start(-2, -4), start(0, 3), start(2, -1)}) few[p] = true;
    const TrackGroups g3 = track_groups(t, 20, few, 20);
    CHECK(g3.count == 3);
    CHECK(g3.of[start(-2, -4)] == 0);
    CHECK(g3.of[start(0, 3)] == 1);
    CHECK(g3.of[start(2, -1)] == 2);
}
