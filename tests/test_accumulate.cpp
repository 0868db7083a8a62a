// Transforms and their accumulation along a series (src/alignment/transform,
// accumulate, subpixel), and the IMOD lines written from them.
#include <doctest/doctest.h>

#include <cmath>

#include "../src/alignment/accumulate.hpp"
#include "../src/alignment/subpixel.hpp"
#include "../src/output/frame_tables.hpp"

using namespace stackalign;

namespace {

// Where the reference's content at (x, y) lands under t (about centre c).
Shift map(const Transform& t, double x, double y, double cx, double cy) {
    return {t.a11 * (x - cx) + t.a12 * (y - cy) + cx + t.dx, t.a21 * (x - cx) + t.a22 * (y - cy) + cy + t.dy};
}

Transform rotation(double deg, double dx, double dy) {
    const double r = deg * M_PI / 180;
    return {std::cos(r), -std::sin(r), std::sin(r), std::cos(r), dx, dy};
}

}  // namespace

TEST_CASE("accumulate: neighbour translations add up outward from the reference") {
    const std::vector<Transform> n = {Transform::translation(1, 0), Transform::translation(2, -1),
                                      Transform::translation(-3, 4)};  // 4 frames
    const auto mid = accumulate(n, 1);
    CHECK(mid[1].dx == 0);
    CHECK(mid[1].dy == 0);
    CHECK(mid[0].dx == -1);
    CHECK(mid[2].dx == 2);
    CHECK(mid[2].dy == -1);
    CHECK(mid[3].dx == -1);
    CHECK(mid[3].dy == 3);
    const auto first = accumulate(n, 0);
    CHECK(first[3].dx == 0);
    CHECK(first[3].dy == 3);
    const auto last = accumulate(n, 3);
    CHECK(last[0].dx == 0);
    CHECK(last[0].dy == -3);
    // Changing the reference changes all offsets by one constant.
    for (int k = 0; k < 4; ++k) CHECK(last[k].dx - first[k].dx == doctest::Approx(-first[3].dx));
    for (const Transform& t : mid) CHECK(t.is_translation());
    CHECK_THROWS(accumulate(n, 4));
}

TEST_CASE("transform: composition and inverse agree with mapping points, rotations included") {
    const double cx = 31.5, cy = 20;
    const Transform a = rotation(3, 1.5, -2), b = rotation(-7, -0.25, 4);
    for (auto [x, y] : {std::pair{0.0, 0.0}, {63.0, 40.0}, {10.0, 35.0}}) {
        const Shift via = map(b, map(a, x, y, cx, cy).dx, map(a, x, y, cx, cy).dy, cx, cy);
        const Shift both = map(a.then(b), x, y, cx, cy);
        CHECK(both.dx == doctest::Approx(via.dx));
        CHECK(both.dy == doctest::Approx(via.dy));
        const Shift back = map(a.inverse(), map(a, x, y, cx, cy).dx, map(a, x, y, cx, cy).dy, cx, cy);
        CHECK(back.dx == doctest::Approx(x));
        CHECK(back.dy == doctest::Approx(y));
    }
    // A chain of rotations about the centre accumulates to their sum.
    const auto chain = accumulate({rotation(2, 0, 0), rotation(3, 0, 0)}, 0);
    CHECK(std::atan2(chain[2].a21, chain[2].a11) * 180 / M_PI == doctest::Approx(5));
    const auto back = accumulate({rotation(2, 0, 0), rotation(3, 0, 0)}, 2);
    CHECK(std::atan2(back[0].a21, back[0].a11) * 180 / M_PI == doctest::Approx(-5));
}

TEST_CASE("transform: translations compose exactly, keeping signed zeros and NaN") {
    const Transform t = Transform::translation(0.1, -0.2).then(Transform::translation(0.2, 0.3));
    CHECK(t.dx == 0.1 + 0.2);
    CHECK(t.dy == -0.2 + 0.3);
    CHECK(std::signbit(Transform{}.inverse().dx));
    CHECK(std::isnan(Transform::translation(NAN, 1).then(Transform::translation(1, 1)).dx));
}

TEST_CASE("accumulate: views left out of the chain are interpolated between their kept neighbours") {
    const std::vector<Transform> pair = {Transform::translation(4, -2), Transform::translation(1, 1)};
    const auto t = chain_offsets(6, {1, 3, 4}, pair, 3);  // views 0, 2, 5 not kept
    CHECK(t[3].dx == 0);
    CHECK(t[1].dx == -4);
    CHECK(t[2].dx == -2);  // halfway between views 1 and 3
    CHECK(t[2].dy == 1);
    CHECK(t[0].dx == -4);  // beyond the first kept view: its transform
    CHECK(t[5].dx == 1);   // beyond the last
}

TEST_CASE("IMOD lines: the transform to apply is the frame's inverse, rotation included") {
    std::vector<FrameResult> frames(2);
    frames[1].offset = rotation(90, 3, 0);
    const std::string xf = imod_xf(frames);
    // Frame 1 rotated content by +90 degrees and moved it 3 px in x; undoing it
    // rotates by -90 degrees and moves (0, 3) (the inverse applied to -d).
    CHECK(xf.substr(73) == "   0.0000000   1.0000000  -1.0000000   0.0000000       0.000       3.000\n");
    CHECK(imod_prexf(frames) == xf);  // relative to the previous view: the same for two frames
}

TEST_CASE("subpixel: parabolic peak offset") {
    CHECK(parabolic_offset(1, 2, 1) == 0.0);
    // Samples of -(x - 0.3)^2 at -1, 0, 1.
    auto f = [](double x) { return -(x - 0.3) * (x - 0.3); };
    CHECK(parabolic_offset(f(-1), f(0), f(1)) == doctest::Approx(0.3));
    CHECK(parabolic_offset(NAN, 2, 1) == 0.0);   // edge of the search square
    CHECK(parabolic_offset(3, 2, 1) == 0.0);     // not a maximum
    CHECK(parabolic_offset(1.9, 2, -100) == doctest::Approx(0.5 * 101.9 / -102.1));
    CHECK(parabolic_offset(1.999, 2, -5) == doctest::Approx(-0.5).epsilon(0.01));
}
