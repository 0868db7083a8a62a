#include <doctest/doctest.h>

#include <cmath>

#include "../src/alignment/accumulate.hpp"

using namespace stackalign;

TEST_CASE("shift chain: neighbour shifts sum outward from the reference") {
    const std::vector<Shift> n = {{1, 0}, {2, -1}, {-3, 4}};  // 4 frames
    const auto mid = accumulate_shifts(n, 1);
    CHECK(mid[1].dx == 0);
    CHECK(mid[1].dy == 0);
    CHECK(mid[0].dx == -1);
    CHECK(mid[2].dx == 2);
    CHECK(mid[2].dy == -1);
    CHECK(mid[3].dx == -1);
    CHECK(mid[3].dy == 3);
    const auto first = accumulate_shifts(n, 0);
    CHECK(first[3].dx == 0);
    CHECK(first[3].dy == 3);
    const auto last = accumulate_shifts(n, 3);
    CHECK(last[0].dx == 0);
    CHECK(last[0].dy == -3);
    // Changing the reference changes all offsets by one constant.
    for (int k = 0; k < 4; ++k) CHECK(last[k].dx - first[k].dx == doctest::Approx(-first[3].dx));
    CHECK_THROWS(accumulate_shifts(n, 4));
}

TEST_CASE("shift chain: parabolic peak offset") {
    CHECK(parabolic_offset(1, 2, 1) == 0.0);
    // Samples of -(x - 0.3)^2 at -1, 0, 1.
    auto f = [](double x) { return -(x - 0.3) * (x - 0.3); };
    CHECK(parabolic_offset(f(-1), f(0), f(1)) == doctest::Approx(0.3));
    CHECK(parabolic_offset(NAN, 2, 1) == 0.0);   // edge of the search square
    CHECK(parabolic_offset(3, 2, 1) == 0.0);     // not a maximum
    CHECK(parabolic_offset(1.9, 2, -100) == doctest::Approx(0.5 * 101.9 / -102.1));
    CHECK(parabolic_offset(1.999, 2, -5) == doctest::Approx(-0.5).epsilon(0.01));
}
