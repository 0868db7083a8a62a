// Each pair's peak against chance (pipelines/stages/pair_confidence.hpp) and
// the run's verdict (judge_run.hpp): real sections that do not match fail,
// real data that aligns stays quiet.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "../pipelines/stack.hpp"
#include "../pipelines/stages/pair_confidence.hpp"
#include "../src/config/config.hpp"
#include "../src/core/error.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

int pairs_not_ok(const nlohmann::json& j) {
    int n = 0;
    for (const auto& p : j["pairs"]) n += p["status"] != "ok";
    return n;
}

// Crops of the real embryo, textured all over (inside the embryo), each at
// least 70 px from the one before in x or y: every pair shares content,
// but only at a shift beyond max_shift = 30, so no peak in the range is
// right. Their scores are no flatter than a real pair's: texture meets
// texture at every candidate.
std::vector<RawFrame> out_of_range_crops() {
    const RawFrame& f = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 6);
    std::mt19937 rng(5);
    std::vector<std::pair<int, int>> at;
    while (at.size() < 16) {
        const int x = 100 + int(rng() % 231), y = 100 + int(rng() % 231);
        if (at.empty() || std::max(std::abs(x - at.back().first), std::abs(y - at.back().second)) > 70)
            at.push_back({x, y});
    }
    std::vector<RawFrame> frames;
    for (auto [x, y] : at) frames.push_back(crop(f, x, y, 150, 150));
    return frames;
}

}  // namespace

TEST_CASE("confidence: the turned view and the ratio") {
    const RawFrame f = frame_of(PixelType::u16, 3, 2, {1, 2, 3, 4, 5, 6});
    const RawFrame t = turned_half_way(f);
    CHECK(t.to_float().at(0, 0) == 6);
    CHECK(t.to_float().at(2, 1) == 1);
    CHECK(t.to_float().at(1, 0) == 5);
    CHECK(turned_half_way(t).bytes == f.bytes);
    // Each pixel size, into a buffer left from a larger frame of another type.
    RawFrame into = frame_of(PixelType::f32, 4, 4, std::vector<double>(16, 9.0));
    for (PixelType type : {PixelType::u8, PixelType::i16, PixelType::f32}) {
        const RawFrame g = frame_of(type, 3, 2, {1, 2, 3, 4, 5, 6});
        turn_half_way(g, into);
        CHECK(into.type == type);
        CHECK(into.bytes.size() == g.bytes.size());
        for (int i = 0; i < 6; ++i) CHECK(into.to_float().pixels[i] == 6 - i);
    }
    CHECK(confidence_from(0.5, 0.1) == doctest::Approx(0.8));
    CHECK(confidence_from(0.1, 0.2) == 0);  // chance scored higher: none
    CHECK(confidence_from(0, 0.1) == 0);
}

TEST_CASE("confidence: real crops whose shifts lie beyond the range are not above chance, and the run fails") {
    const std::vector<RawFrame> frames = out_of_range_crops();
    // The confidence alone (no sharpness test): at least 90 % not ok.
    const nlohmann::json alone =
        run_stack_job(temp_dir("confidence_alone"), frames, "max_shift = 30\n[alignment]\nmin_sharpness = 0");
    int unsure = 0;
    for (const auto& p : alone["pairs"]) {
        CHECK(p["confidence"].get<double>() >= 0);
        CHECK(p["confidence"].get<double>() <= 1);
        unsure += p["status"].get<std::string>().find("not above chance") != std::string::npos;
    }
    INFO(alone["pairs"].dump());
    CHECK(unsure >= 14);  // of 15
    CHECK(alone["quality"]["verdict"] == "failed");
    // With every check (the default), as the user gets it.
    const std::string dir = temp_dir("confidence_all");
    const nlohmann::json all = run_stack_job(dir, frames, "max_shift = 30");
    CHECK(pairs_not_ok(all) >= 14);
    CHECK(all["quality"]["verdict"] == "failed");
    CHECK(all["quality"]["reasons"][0].get<std::string>().find("pairs not ok") != std::string::npos);
    // A verdict is not an error, unless --fail-on asks.
    const std::string job = dir + "/job.toml";
    CHECK(run_cli("run -q " + job) == 0);
    CHECK(run_cli("run -q --fail-on failed " + job) == int(ExitCode::verdict));
    // min_confidence = 0: no null searches, no confidence.
    const nlohmann::json off =
        run_stack_job(temp_dir("confidence_off"), frames, "max_shift = 30\n[alignment]\nmin_confidence = 0");
    CHECK(off["pairs"][0]["confidence"].is_null());
}

// A real frame drifting with noise stays quiet too: tests/test_solve.cpp's drift case.
TEST_CASE("confidence: the real HAADF tilt series stays quiet, verdict ok") {
    const std::string dir = temp_dir("confidence_haadf");
    write_text(dir + "/job.toml", sample_config("sample_tilt_series", dir + "/out"));
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    run_stack(load_config(dir + "/job.toml"), quiet);
    const auto j = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(pairs_not_ok(j) <= 1);
    CHECK(j["quality"]["verdict"] == "ok");
    double lowest = 1;
    for (const auto& p : j["pairs"]) lowest = std::min(lowest, p["confidence"].get<double>());
    CHECK(lowest > 0.45);  // 0.54 measured: well above min_confidence 0.3
}
