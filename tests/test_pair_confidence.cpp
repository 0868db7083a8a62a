// Each pair's peak against chance (pipelines/stages/pair_confidence.hpp) and
// the run's verdict (judge_run.hpp): real sections that do not match fail,
// real data that aligns stays quiet.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "../pipelines/stack.hpp"
#include "../kernels/cuda_api.hpp"
#include "../kernels/pair_searcher.hpp"
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

// The real embryo frame mirrored across its edges (period 1022 px) into
// a side x side u8 frame, moved by (dx, dy): pixel (x, y) is the mirror's
// (x - dx, y - dy).
RawFrame mirrored_embryo(int side, int dx, int dy) {
    const RawFrame& f = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 6);
    auto fold = [](int v) {
        v = ((v % 1022) + 1022) % 1022;
        return v < 512 ? v : 1021 - v;
    };
    RawFrame out = frame_of(PixelType::u8, side, side, {});
    out.bytes.resize(std::size_t(side) * side);
    for (int y = 0; y < side; ++y)
        for (int x = 0; x < side; ++x)
            out.bytes[std::size_t(y) * side + x] = f.bytes[std::size_t(fold(y - dy)) * 512 + fold(x - dx)];
    return out;
}

}  // namespace

TEST_CASE("confidence: a window of 4 M px has its null scored on every 2nd pixel of every 2nd row, at the lattice's shifts") {
    SearchSetup pairs;
    pairs.search = square_search(64, 71, 70, 2048, 2048, 70);  // 2048^2 = kSampledNullPixels
    const NullSearch null = null_search(pairs, 2200, 2200);
    CHECK(null.sample.stride == 2);
    CHECK(null.sample.x == 1);  // the window's corner: the sample holds it
    CHECK(null.sample.y == 0);
    CHECK(null.lattice.reach.x == 8);  // null_lattice(70): every 8th shift to 64 ...
    CHECK(null.lattice.step.x == 4);   // ... which is every 4th of the sample's pixels
    CHECK(null.setup.search.window.x == 35);
    CHECK(null.setup.search.window.width == 1024);
    CHECK(null.setup.search.max_shift.x == 32);
    CHECK(null.setup.subpixel == Subpixel::off);
    // Smaller windows, and lattices of odd steps (a range of 24: every 3rd), are scored whole.
    SearchSetup small = pairs;
    small.search = square_search(64, 71, 70, 2047, 2048, 70);
    CHECK(null_search(small, 2200, 2200).sample.stride == 1);
    SearchSetup odd = pairs;
    odd.search = square_search(64, 71, 70, 2048, 2048, 24);
    CHECK(null_search(odd, 2200, 2200).sample.stride == 1);
    CHECK(null_search(odd, 2200, 2200).lattice.step.x == 3);

    // On real content moved by a lattice shift, the sample's search finds
    // it, and its peak's MI is the one of the full-resolution bins' pixels
    // it samples (counted here directly), on either backend.
    const RawFrame ref = mirrored_embryo(2200, 0, 0), mov = mirrored_embryo(2200, 16, -8);
    const BinImage a = cpu::preprocess(ref, pairs.preprocess), b = cpu::preprocess(mov, pairs.preprocess);
    const SearchWindow& w = pairs.search.window;
    std::vector<std::uint32_t> hist(64 * 64, 0);
    for (int y = w.y; y < w.y + w.height; y += 2)
        for (int x = w.x; x < w.x + w.width; x += 2)
            ++hist[a.pixels[std::size_t(y) * 2200 + x] * 64 + b.pixels[std::size_t(y - 8) * 2200 + x + 16]];
    const double expected = mi_from_histogram(hist.data(), 64, nlogn_table(std::int64_t(1024) * 1024));
    std::vector<Device> devices = {Device{}};
    if (cuda::device_count() > 0) devices.push_back(Device{Backend::cuda, 0});  // else the CPU's alone
    for (const Device& device : devices) {
        CAPTURE(name_of(device.backend));
        const std::unique_ptr<PairSearcher> searcher = make_pair_searcher(device, null.setup);
        const LoadOptions sampled{false, false, null.sample};
        searcher->load(0, ref, sampled);
        searcher->load(1, mov, sampled);
        const MiPeak peak = searcher->search_near(0, 1, IntShift{}, null.lattice.reach, IntShift{}, null.lattice.step);
        CHECK(peak.dx == 8);  // 16 px
        CHECK(peak.dy == -4);
        CHECK(peak.mi == doctest::Approx(expected).epsilon(1e-9));  // the GPU sums the score in its own order
        // A sample is of a 2D frame's bins for peaks only, and not of projections.
        CHECK_THROWS_AS(searcher->load(2, ref, LoadOptions{true, false, null.sample}), std::logic_error);
        CHECK_THROWS_AS(searcher->load(2, crop_volume(sample_volume("sample_data/fish1_pre_anatomy_41x83x166.tif"), 0, 0, 0,
                                                      40, 40, 4), sampled),
                        std::logic_error);
        SearchSetup projections = null.setup;
        projections.method = SearchMethod::mtb_projection;
        CHECK_THROWS_AS(make_pair_searcher(device, projections)->load(0, ref, sampled), std::logic_error);
    }
}

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
