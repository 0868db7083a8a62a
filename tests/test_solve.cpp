// Least-squares offsets from neighbour and skip pairs, and the "unreliable"
// flag that comes with them: arithmetic on exact numbers, then real data.
#include <doctest/doctest.h>

#include <cstdio>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../pipelines/stack.hpp"
#include "../src/alignment/solve_offsets.hpp"
#include "../src/config/config.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

TEST_CASE("solve: least squares averages a pair's error over the pairs that overlap it") {
    // Truth: offsets 0, 1, 3, 6 (x). The neighbour 1->2 is measured 0.6 too high.
    const std::vector<PairConstraint> pairs = {
        {0, 1, {1, 0}}, {1, 2, {2.6, 0}}, {2, 3, {3, 0}}, {0, 2, {3, 0}}, {1, 3, {5, 0}}};
    std::vector<double> residuals;
    const std::vector<Shift> o = solve_offsets(4, 0, pairs, &residuals);
    CHECK(o[0].dx == 0);
    // The chain would put view 3 at 6.6; the skips pull it back.
    CHECK(std::fabs(o[3].dx - 6) < 0.3);
    CHECK(std::fabs(o[2].dx - 3) < std::fabs(3.6 - 3));
    CHECK(residuals[1] > residuals[0]);  // the wrong pair has the largest residual
    CHECK(residuals[1] > residuals[2]);
    // Consistent pairs: exact offsets, zero residuals, from any reference.
    const std::vector<PairConstraint> exact = {{0, 1, {1, -1}}, {1, 2, {2, 0.5}}, {0, 2, {3, -0.5}}};
    const std::vector<Shift> e = solve_offsets(3, 1, exact, &residuals);
    CHECK(e[0].dx == doctest::Approx(-1));
    CHECK(e[2].dy == doctest::Approx(0.5));
    for (double r : residuals) CHECK(r < 1e-6);
    auto t = [](double dx, double dy) { return Transform::translation(dx, dy); };
    CHECK(triplet_inconsistency(t(1, 2), t(3, -1), t(4, 1), 100, 80) == 0);
    CHECK(triplet_inconsistency(t(1, 2), t(3, -1), t(1, 5), 100, 80) == doctest::Approx(5));
}

namespace {

int count_status(const nlohmann::json& j, const std::string& word) {
    int n = 0;
    for (const auto& p : j["pairs"]) n += p["status"].get<std::string>().find(word) != std::string::npos;
    return n;
}

}  // namespace

TEST_CASE("unreliable: a stack of unrelated real images has every pair flagged") {
    // Eight crops of one real frame, far apart: each a different part of the
    // embryo and its surroundings, so no pair shares a scene.
    const RawFrame& f = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 6);
    std::vector<RawFrame> frames;
    for (auto [x, y] : std::vector<std::pair<int, int>>{{40, 60}, {300, 320}, {180, 40}, {330, 120},
                                                       {60, 330}, {200, 200}, {320, 20}, {120, 180}})
        frames.push_back(crop(f, x, y, 150, 150));
    const nlohmann::json j = run_stack_job(temp_dir("unreliable_unrelated"), frames, "max_shift = 10");
    CHECK(count_status(j, "ok") == 0);
    // Without the sharpness and confidence tests, the triplets alone flag them.
    const nlohmann::json t = run_stack_job(temp_dir("unreliable_unrelated_triplets"), frames,
                                     "max_shift = 10\n[alignment]\nmin_sharpness = 0\nmin_confidence = 0");
    CHECK(count_status(t, "unreliable") == 7);
    // Rigid pairs too: their skip pairs are searched at the neighbours'
    // composed angle and disagree with them.
    const nlohmann::json r = run_stack_job(temp_dir("unreliable_unrelated_rigid"), frames,
                                     "max_shift = 10\ntransform = \"rigid\"\n[alignment]\nmin_sharpness = 0\nmin_confidence = 0");
    CHECK(count_status(r, "unreliable") == 7);
}

TEST_CASE("unreliable: a real frame drifting by known shifts, with noise, has no pair flagged, verdict ok; both solves within 0.05 px, each view preprocessed once") {
    // Crops of one real frame along a known random walk (whole and half
    // pixels: 2x2-binned crops of the frame), with Poisson noise.
    const RawFrame& f = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 6);
    std::mt19937 rng(7);
    std::vector<std::pair<int, int>> walk = {{0, 0}};
    for (int k = 1; k < 14; ++k)
        walk.push_back({walk.back().first + int(rng() % 11) - 5, walk.back().second + int(rng() % 11) - 5});
    std::vector<RawFrame> frames;
    for (auto [x, y] : walk) {
        RawFrame c = crop(f, 150 + x, 150 + y, 200, 200);
        for (unsigned char& b : c.bytes) b = (unsigned char)std::min(255, std::poisson_distribution<int>(b / 4.0 + 0.5)(rng) * 4);
        frames.push_back(std::move(c));
    }
    double error[2] = {0, 0};
    for (int solve = 0; solve < 2; ++solve) {
        const std::string dir = temp_dir("unreliable_drift" + std::to_string(solve));
        const nlohmann::json j = run_stack_job(dir, frames,
                                         "window = [160, 160]\nmax_shift = 12\n[alignment]\nreference = 0\nsolve = \"" +
                                             std::string(solve ? "least-squares" : "chain") + "\"");
        CHECK(count_status(j, "unreliable") == 0);
        // Nothing else flagged either: every pair above chance, verdict ok.
        int not_ok = 0;
        for (const auto& p : j["pairs"]) not_ok += p["status"] != "ok";
        CHECK(not_ok <= 1);
        CHECK(j["quality"]["verdict"] == "ok");
        if (solve) CHECK(j["quality"]["triplet_rms_px"].get<double>() < 0.5);
        // Each view preprocessed once: a skip pair searches the views its
        // neighbour pairs left in the searcher's slots, about their sum, but
        // for the few whose range about it leaves the frame (a shifted copy
        // then; before, every skip pair loaded two views: 38 loads).
        CHECK(j["views_preprocessed"].get<int>() <= (solve ? 17 : 14));
        const std::string csv = read_text(dir + "/out/shifts.csv");
        std::istringstream in(csv);
        std::string line;
        std::getline(in, line);
        for (std::size_t k = 0; std::getline(in, line); ++k) {
            double dx = 0, dy = 0;
            std::sscanf(line.c_str(), "%*d,%lf,%lf", &dx, &dy);
            // Frame k shows the content moved by -(walk_k - walk_0).
            error[solve] += std::hypot(dx + walk[k].first, dy + walk[k].second);
        }
    }
    MESSAGE("mean offset error: chain " << error[0] / 14 << " px, least squares " << error[1] / 14 << " px");
    CHECK(error[0] / 14 < 0.05);
    CHECK(error[1] / 14 < 0.05);
}
