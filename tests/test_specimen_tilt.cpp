// The specimen's tilt from tracked points (src/alignment/specimen_tilt.hpp):
// known planes turned by a known stage offset, through the tracks' own fit
// (across_tracks.hpp) and as points alone.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../src/alignment/across_tracks.hpp"
#include "../src/alignment/specimen_tilt.hpp"

using namespace stackalign;

namespace {

constexpr double kDeg = M_PI / 180;

// A level point (x, z) as the views at nominal angles see it when the stage
// stands at +offset: the point turned by the offset.
TrackedPoint turned_by_stage(double x, double z, double offset_deg, int group) {
    const double c = std::cos(offset_deg * kDeg), s = std::sin(offset_deg * kDeg);
    return {x * c + z * s, -x * s + z * c, 1.0, group};
}

}  // namespace

TEST_CASE("specimen tilt: one layer seen with the stage at +2.5 degrees is laid level by its tracks") {
    std::vector<double> tilts;
    for (double a = -60; a <= 60; a += 2) tilts.push_back(a);
    const int n = int(tilts.size()), reference = n / 2;
    PatchTracks t;
    t.width = 241, t.height = 121, t.patch_px = 32;
    const double cx = (t.width - 1) / 2.0, cy = (t.height - 1) / 2.0;
    std::mt19937 rng(3);
    std::normal_distribution<double> noise(0, 0.03), depth(0, 0.2);
    std::uniform_real_distribution<double> misplaced(-0.5, 0.5);
    std::vector<double> e(n);
    for (double& v : e) v = misplaced(rng);  // the views' own errors, which the tracks take off first
    for (int j = -4; j <= 4; ++j)
        for (int i = -5; i <= 5; ++i) {
            const TrackedPoint p = turned_by_stage(20.0 * i, 12 + depth(rng), 2.5, 0);
            std::vector<double> tx(n), ty(n, cy + 12.0 * j);
            for (int k = 0; k < n; ++k)
                tx[k] = cx + p.x * std::cos(tilts[k] * kDeg) + p.z * std::sin(tilts[k] * kDeg) + e[k] - e[reference] +
                        (k == reference ? 0.0 : noise(rng));
            t.x.push_back(tx), t.y.push_back(ty);
        }
    const AcrossCorrection a = across_correction_from_tracks(t, tilts, reference);
    REQUIRE(a.points.size() > 200);
    const SpecimenTilt s = specimen_tilt_from_points(a.points);
    INFO("found " << s.offset_deg << " +- " << s.stated_error << " (spread " << s.spread_px << " px)");
    REQUIRE(s.found);
    CHECK(std::fabs(s.offset_deg - 2.5) < 0.05);
    CHECK(s.layers == 1);
    CHECK(std::fabs(s.offset_deg - 2.5) < 2 * s.stated_error);
    CHECK(s.planar);
}

TEST_CASE("specimen tilt: two layers far apart, each seen over another part of the field, share one slope") {
    // A line through all the points would lean towards the layers' own
    // places (the deeper layer right of the axis); the planes are level.
    std::mt19937 rng(8);
    std::normal_distribution<double> depth(0, 0.3);
    std::uniform_real_distribution<double> left(-120, 20), right(-20, 120);
    std::vector<TrackedPoint> points;
    for (int i = 0; i < 300; ++i) points.push_back(turned_by_stage(left(rng), -19 + depth(rng), -1.5, i % 20));
    for (int i = 0; i < 200; ++i) points.push_back(turned_by_stage(right(rng), 19 + depth(rng), -1.5, i % 20));
    const SpecimenTilt s = specimen_tilt_from_points(points);
    INFO("found " << s.offset_deg << " +- " << s.stated_error);
    REQUIRE(s.found);
    CHECK(s.layers == 2);
    CHECK(std::fabs(s.offset_deg + 1.5) < 0.05);
    CHECK(s.gathered > 0.95);
    CHECK(s.planar);
}

TEST_CASE("specimen tilt: content that fills a slab's depth lies in no plane, and the bound says so") {
    std::mt19937 rng(2);
    std::uniform_real_distribution<double> x(-120, 120), z(-25, 25);
    std::vector<TrackedPoint> points;
    for (int i = 0; i < 500; ++i) points.push_back(turned_by_stage(x(rng), z(rng), 0.0, i % 20));
    const SpecimenTilt s = specimen_tilt_from_points(points);
    INFO("bound " << s.content_bound_deg << " spread " << s.spread_px);
    CHECK(!s.planar);
    CHECK(s.stated_error >= s.content_bound_deg);
    points.resize(19);
    CHECK(!specimen_tilt_from_points(points).found);
}
