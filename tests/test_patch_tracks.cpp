// The patch tracks the tilt axis is fitted to (kernels/tracks): patches of a
// real frame moved by known sub-pixel amounts are followed to them, and the
// CUDA twin follows every patch to the CPU's places, bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../kernels/tracks/patch_tracks.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {
// 21 views of a 192^2 crop of the real embryo frame, view k's content moved
// by shifts[k] (Fourier phase ramps).
std::vector<ImageF> moved_views(const std::vector<std::pair<double, double>>& shifts) {
    const RawFrame base = crop(sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 8), 160, 160, 192, 192);
    std::vector<ImageF> views;
    for (const auto& [dx, dy] : shifts) views.push_back(fourier_shifted(base, dx, dy).to_float());
    return views;
}

std::vector<std::pair<double, double>> random_shifts(int n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1.5, 1.5);
    std::vector<std::pair<double, double>> s(n);
    for (auto& [x, y] : s) x = u(rng), y = u(rng);
    return s;
}

// Whether two places are the same bits (NaN, a lost patch, equal to NaN).
bool same_place(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }
}  // namespace

TEST_CASE("patch tracks: patches of a real frame are followed to their known sub-pixel moves") {
    const int n = 21, reference = 10;
    const auto shifts = random_shifts(n, 7);
    const std::vector<double> tilts(n, 0.0);  // no foreshortening: each view is its neighbour moved
    const PatchTracks t = cpu::track_patches(moved_views(shifts), tilts, reference, false);
    REQUIRE(t.x.size() >= 9);
    CHECK(t.patch_px == 32);
    std::vector<double> errors;
    int followed = 0;
    for (std::size_t p = 0; p < t.x.size(); ++p)
        for (int i = 0; i < n; ++i) {
            if (i == reference || std::isnan(t.x[p][i])) continue;
            ++followed;
            const double ex = t.x[p][i] - t.x[p][reference] - (shifts[i].first - shifts[reference].first);
            const double ey = t.y[p][i] - t.y[p][reference] - (shifts[i].second - shifts[reference].second);
            errors.push_back(std::hypot(ex, ey));
        }
    // Every patch through every view: nothing leaves a 192-px view by 3 px.
    CHECK(followed == int(t.x.size()) * (n - 1));
    std::sort(errors.begin(), errors.end());
    const double median = errors[errors.size() / 2], worst = errors.back();
    MESSAGE("tracked places from the known moves: median " << median << " px, worst " << worst << " px");
    // Each view is found against its neighbour, so errors add up outwards
    // from the reference: median 0.012, worst 0.038 px when written.
    CHECK(median < 0.025);
    CHECK(worst < 0.08);
}

TEST_CASE("patch tracks: the CUDA twin follows every patch to the CPU's places, bit for bit") {
    if (skip_without_gpu()) return;
    const int n = 21, reference = 10;
    std::vector<ImageF> views = moved_views(random_shifts(n, 11));
    // Missing data in some views (a frame's edge turned onto the grid), so
    // the clear mask and lost tracks are compared too.
    for (int k : {0, 3, 17, 20})
        for (int y = 0; y < views[k].height; ++y)
            for (int x = 0; x < 12 + 3 * k % 9 + y / 8; ++x) views[k].pixels[std::size_t(y) * views[k].width + x] = NAN;
    std::vector<double> tilts(n);
    for (int i = 0; i < n; ++i) tilts[i] = -50 + 5 * i;
    for (bool slab : {false, true}) {
        CAPTURE(slab);
        const PatchTracks a = cpu::track_patches(views, tilts, reference, slab);
        const PatchTracks b = cuda::track_patches(views, tilts, reference, slab, 0);
        REQUIRE(a.x.size() == b.x.size());
        int differ = 0, lost = 0;
        for (std::size_t p = 0; p < a.x.size(); ++p)
            for (int i = 0; i < n; ++i) {
                differ += !same_place(a.x[p][i], b.x[p][i]) || !same_place(a.y[p][i], b.y[p][i]);
                lost += std::isnan(a.x[p][i]);
            }
        MESSAGE("slab " << slab << ": " << a.x.size() << " patches, " << lost << " places lost, " << differ
                        << " differ");
        CHECK(differ == 0);
        CHECK(lost > 0);  // the missing data ended some tracks
    }
}
