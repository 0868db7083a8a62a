// Tilt series as tomographers run them: angles, cosine stretching, views to
// exclude, flagged pairs, IMOD's .prexf/.prexg, MRC in and out, the report.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "../pipelines/stack.hpp"
#include "../pipelines/stages/stretch_choice.hpp"
#include "../src/alignment/accumulate.hpp"
#include "../src/alignment/apply.hpp"
#include "../src/config/config.hpp"
#include "../src/core/error.hpp"
#include "../src/io/mrc_io.hpp"
#include "../src/alignment/pair_checks.hpp"
#include "../src/output/png_image.hpp"
#include "../src/io/tiff_io.hpp"
#include "../src/alignment/tilt_geometry.hpp"
#include "../src/io/tilt_angles.hpp"
#include "../kernels/cuda_api.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace stackalign;
using namespace test_support;

namespace {

const char* kTilt = "sample_data/haadf_tilt_91x64x64.tif";

// A real view moved by (dx, dy) and, for a slab specimen seen at tilt
// `high` instead of `low`, foreshortened perpendicular to the (vertical)
// axis by cos(high)/cos(low) about the image centre.
RawFrame tilted_copy(const RawFrame& view, double low, double high, double dx, double dy) {
    const double f = std::cos(high * M_PI / 180) / std::cos(low * M_PI / 180);
    const LinearTransform t{f, 0, 0, 1, dx, dy, (view.width - 1) / 2.0, (view.height - 1) / 2.0};
    return transform_frame(view, t, view.mean());
}

// The HAADF view at `index` as float, upsampled 3x (a 192x192 view: room
// for a window and a search range), values as read.
RawFrame upsampled_view(int index) {
    const RawFrame& v = sample_frame(kTilt, index);
    RawFrame big;
    big.type = PixelType::f32;
    big.width = big.height = 192;
    big.bytes.resize(192 * 192 * 4);
    const ImageF in = v.to_float();
    auto* out = reinterpret_cast<float*>(big.bytes.data());
    for (int y = 0; y < 192; ++y)
        for (int x = 0; x < 192; ++x) {
            const double sx = std::min(62.999, x / 3.0), sy = std::min(62.999, y / 3.0);
            const int x0 = int(sx), y0 = int(sy);
            const double fx = sx - x0, fy = sy - y0;
            out[y * 192 + x] = float((1 - fy) * ((1 - fx) * in.at(x0, y0) + fx * in.at(x0 + 1, y0)) +
                                     fy * ((1 - fx) * in.at(x0, y0 + 1) + fx * in.at(x0 + 1, y0 + 1)));
        }
    return big;
}

std::string tilt_job(const std::string& stack, const std::string& angles, const std::string& alignment,
                     const std::string& extra_output = "") {
    return "[input]\nstack = \"" + stack + "\"\nangles = " + angles +
           "\n[preprocess]\nmean_radius = 1\nthreshold = 10.0\nbins = 32\n[search]\nwindow = [120, 120]\nmax_shift = 12\n"
           "[alignment]\n" + alignment + "\n[output]\ndir = \"out\"\n" + extra_output;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

}  // namespace

TEST_CASE("tilt angles: .tlt files, ranges, counts and errors") {
    CHECK(parse_tilt_angles("-60.0\n -58.5\n\n# comment\n-57\r\n", "a.tlt") == std::vector<double>{-60, -58.5, -57});
    CHECK_THROWS_WITH_AS(parse_tilt_angles("-60\n-58 deg\n", "a.tlt"), doctest::Contains("a.tlt:2: expected one tilt angle"),
                         InputError);
    CHECK_THROWS_WITH_AS(parse_tilt_angles("-60\n95\n", "a.tlt"), doctest::Contains("a.tlt:2: tilt angle 95 is outside"),
                         InputError);
    CHECK_THROWS_AS(parse_tilt_angles("\n\n", "a.tlt"), InputError);
    CHECK(tilt_range(-60, 2, 3) == std::vector<double>{-60, -58, -56});
    CHECK(lowest_tilt_view({-4, -2, 1, 3}, {false, false, false, false}) == 2);
    CHECK(lowest_tilt_view({-4, -2, 1, 3}, {false, false, true, false}) == 1);
    // The stretch: along x for a vertical axis, along the rotated
    // perpendicular otherwise; unstretch inverts it.
    const Stretch s = cosine_stretch(0, 60, 0);
    CHECK(s.s[0] == doctest::Approx(2.0));
    CHECK(s.s[3] == doctest::Approx(1.0));
    const Stretch r = cosine_stretch(0, 60, 90);  // axis along x: stretch along y
    CHECK(r.s[0] == doctest::Approx(1.0));
    CHECK(r.s[3] == doctest::Approx(2.0));
    double dx = 4, dy = 3;
    cosine_stretch(10, 50, 30).unstretch(dx, dy);
    const Stretch q = cosine_stretch(10, 50, 30);
    CHECK(q.s[0] * dx + q.s[1] * dy == doctest::Approx(4));
    CHECK(q.s[2] * dx + q.s[3] * dy == doctest::Approx(3));

    const std::string dir = temp_dir("tilt_count");
    write_tiff_stack(dir + "/s.tif", {sample_frame(kTilt, 44), sample_frame(kTilt, 45), sample_frame(kTilt, 46)});
    write_text(dir + "/s.tlt", "-2\n0\n");
    write_text(dir + "/job.toml", "[input]\nstack = \"s.tif\"\nangles = \"s.tlt\"\n");
    CHECK_THROWS_WITH_AS(plan_stack(load_config(dir + "/job.toml"), RunOptions{}),
                         doctest::Contains(("has 2 tilt angles but the stack " + dir + "/s.tif has 3 frames").c_str()), InputError);
    write_text(dir + "/range.toml", "[input]\nstack = \"s.tif\"\nangles = {start = -2, step = 2}\n");
    const StackPlan plan = plan_stack(load_config(dir + "/range.toml"), RunOptions{});
    CHECK(plan.angles == std::vector<double>{-2, 0, 2});
    CHECK(plan.reference == 1);
    CHECK(plan.reference_why == "lowest |tilt|");
    write_text(dir + "/bad.toml", "[input]\nstack = \"s.tif\"\nangles = {start = -2}\n");
    CHECK_THROWS_WITH_AS(load_config(dir + "/bad.toml"), doctest::Contains("bad.toml:3: [input] angles"), ConfigError);
    write_text(dir + "/ex.toml", "[input]\nstack = \"s.tif\"\n[alignment]\nexclude = [0, 5]\n");
    CHECK_THROWS_WITH_AS(plan_stack(load_config(dir + "/ex.toml"), RunOptions{}),
                         doctest::Contains("ex.toml:4: [alignment] exclude: view 5 does not exist"), ConfigError);
}

TEST_CASE("cosine stretch: known shifts between real high-tilt views are recovered within 0.5 px") {
    // Real HAADF views at high tilt, each paired with a copy foreshortened as
    // a slab specimen two degrees further out would be, and moved by a
    // known shift. Searched with and without stretching; both errors printed.
    const std::string dir = temp_dir("tilt_stretch");
    struct Case {
        int view;
        double low, high, dx, dy;
    };
    const Case cases[] = {{80, 70, 72, 3, -2}, {84, 78, 80, -2.5, 1.5}, {10, -70, -72, -4, 2}};
    for (const Case& c : cases) {
        CAPTURE(c.low);
        CAPTURE(c.high);
        const RawFrame a = upsampled_view(c.view);
        const RawFrame b = tilted_copy(a, c.low, c.high, c.dx, c.dy);
        write_tiff_stack(dir + "/pair.tif", {a, b});
        double error[2];
        for (int stretch = 0; stretch < 2; ++stretch) {
            const std::string angles = "{start = " + std::to_string(c.low) + ", step = " + std::to_string(c.high - c.low) + "}";
            const StackResult r = run_quiet(dir, tilt_job("pair.tif", angles,
                                                          std::string("cosine_stretch = ") + (stretch ? "true" : "false")));
            REQUIRE(r.pairs.size() == 1);
            const Shift s = r.pairs[0].shift.offset();
            error[stretch] = std::hypot(s.dx - c.dx, s.dy - c.dy);
            if (stretch) CHECK(r.pairs[0].stretch == doctest::Approx(std::cos(c.low * M_PI / 180) / std::cos(c.high * M_PI / 180)));
        }
        MESSAGE("tilt " << c.low << " -> " << c.high << ": shift error without stretch " << error[0]
                        << " px, with stretch " << error[1] << " px");
        CHECK(error[1] < 0.5);
        CHECK(error[1] <= error[0]);
    }
}

// The sample needle's series reaches +-90 degrees, where no slab is
// imaged: "auto" does not stretch it and gives what cosine_stretch = false
// gives, byte for byte; within +-80 it tries both ways; `true` is obeyed.
TEST_CASE("cosine stretch \"auto\": off for a series beyond a slab's +-80 degrees, both ways within them") {
    const std::string dir = temp_dir("stretch_auto_range");
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    quiet.backend = BackendRequest::cpu;
    std::string whole = sample_config("sample_tilt_series", "out");
    whole.replace(whole.find("report = true"), 13, "report = false");
    auto with = [](std::string cfg, const std::string& stretch) {
        cfg.replace(cfg.find("cosine_stretch = false"), 22, "cosine_stretch = " + stretch);
        return cfg;
    };
    struct Case {
        std::string cfg;
        bool stretch, both_ways;
    };
    const Case cases[] = {{with(whole, "\"auto\""), false, false},
                          {with(whole, "true"), true, false},
                          {with(sample_tilt_within_slab_range(whole, dir), "\"auto\""), true, true}};
    for (const Case& c : cases) {
        write_text(dir + "/job.toml", c.cfg);
        const StackPlan plan = plan_stack(load_config(dir + "/job.toml"), quiet);
        CAPTURE(plan.stretch_why);
        CHECK(plan.stretch == c.stretch);
        CHECK(plan.stretch_auto == c.both_ways);
        CHECK(plan.stretch_ruled_out == (!c.stretch && !c.both_ways));
    }
    run_quiet(dir, cases[0].cfg);
    const std::string automatic = read_text(dir + "/out/shifts.csv");
    const nlohmann::json record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(record["plan"]["cosine_stretch"] == "off");
    CHECK(record["plan"]["cosine_stretch_chosen_by"].get<std::string>().find("reaches 90 degrees, beyond a slab's 80") !=
          std::string::npos);
    for (const nlohmann::json& p : record["pairs"]) CHECK(p["stretch"].get<double>() == 1.0);
    run_quiet(dir, with(whole, "false"));
    CHECK(read_text(dir + "/out/shifts.csv") == automatic);
}

// Within a slab's range "auto" aligns the pairs stretched and as read and
// keeps the stretched way unless the way as read leaves a least-squares
// residual under 1/kAsReadMargin of it (the needle here does, by far): the
// job's shifts.csv is, byte for byte, that of the way it names, and the
// residuals it quotes are the two ways' own.
TEST_CASE("cosine stretch \"auto\": the way with the clearly smaller least-squares residual is kept, whole") {
    const std::string dir = temp_dir("stretch_auto_choice");
    std::string cfg = sample_tilt_within_slab_range(sample_config("sample_tilt_series", "out"), dir);
    cfg.replace(cfg.find("report = true"), 13, "report = false");
    auto run_with = [&](const std::string& stretch) {
        std::string c = cfg;
        // The offset held at 0: "auto" would find one for the stretched ways only.
        c.replace(c.find("cosine_stretch = false"), 22, "cosine_stretch = " + stretch + "\ntilt_offset = 0");
        run_quiet(dir, c);
        const nlohmann::json record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
        double squares = 0;
        int n = 0;
        for (const char* kind : {"pairs", "skip_pairs"})
            for (const nlohmann::json& p : record[kind]) squares += std::pow(p["residual"].get<double>(), 2), ++n;
        return std::pair{read_text(dir + "/out/shifts.csv"), std::sqrt(squares / n)};
    };
    const auto [stretched, stretched_rms] = run_with("true");
    const auto [as_read, as_read_rms] = run_with("false");
    const auto [automatic, automatic_rms] = run_with("\"auto\"");
    const nlohmann::json record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    const std::string why = record["plan"]["cosine_stretch_chosen_by"];
    CAPTURE(why);
    CHECK(record["plan"]["cosine_stretch"] == "auto");
    // The needle: stretching is wrong for it, and its residual says so.
    REQUIRE(as_read_rms * kAsReadMargin < stretched_rms);
    CHECK(automatic == as_read);
    CHECK(automatic != stretched);
    CHECK(automatic_rms == doctest::Approx(as_read_rms));
    CHECK(why.find("auto: as read") == 0);
    char quoted[64];
    std::snprintf(quoted, sizeof quoted, "%.4f px RMS as read against %.4f stretched", as_read_rms, stretched_rms);
    CHECK(why.find(quoted) != std::string::npos);
}

// A flat specimen (one real view foreshortened by the cosine of each tilt,
// each moved by a known shift): as read, the triplets disagree by far more
// than stretched, so "auto" stops that way's search once it cannot win
// (losing_way_stop) and gives what `true` gives, byte for byte.
TEST_CASE("cosine stretch \"auto\": a way that cannot win stops early, and the other's pairs are the job's") {
    const std::string dir = temp_dir("stretch_auto_stop");
    const RawFrame flat = upsampled_view(45);
    std::vector<RawFrame> views;
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> jitter(-2, 2);
    for (int k = 0; k < 31; ++k) views.push_back(tilted_copy(flat, 0, -60 + 4 * k, jitter(rng), jitter(rng)));
    write_tiff_stack(dir + "/flat.tif", views);
    auto run_with = [&](const std::string& stretch) {
        run_quiet(dir, tilt_job("flat.tif", "{start = -60, step = 4}", "cosine_stretch = " + stretch,
                                "report = false\naligned = false\n"));
        return read_text(dir + "/out/shifts.csv");
    };
    const std::string stretched = run_with("true");
    CHECK(run_with("\"auto\"") == stretched);
    const nlohmann::json record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    const std::string why = record["plan"]["cosine_stretch_chosen_by"];
    CAPTURE(why);
    CHECK(why.find("auto: stretched; as read stopped after ") == 0);

    // The way that stops is searched at the smoothing the frames' noise
    // gives, with no smoothing trial of its own; the first way's is made
    // (the frames are clean: 0.65 px, weighed against 1 px).
    write_text(dir + "/job.toml", tilt_job("flat.tif", "{start = -60, step = 4}", "cosine_stretch = \"auto\""));
    RunOptions cpu;
    cpu.verbosity = Verbosity::quiet;
    cpu.backend = BackendRequest::cpu;
    const std::vector<StackPlan> ways = stretch_candidates(plan_stack(load_config(dir + "/job.toml"), cpu));
    REQUIRE(ways.size() == 2);
    FrameReader frames(ways[0].files, std::size_t(64) << 20);
    StageTimes times;
    const std::optional<AlignedPairs> first = search_one_way(ways[0], frames, std::nullopt, times, Verbosity::quiet);
    CHECK(first->plan.refine_trial);
    CHECK_FALSE(first->search.stopped);
    const AlignedPairs second = search_one_way(ways[1], frames, first, times, Verbosity::quiet);
    CHECK(second.search.stopped);
    CHECK_FALSE(second.plan.stretch);
    CHECK_FALSE(second.plan.refine_trial);
    CHECK(second.plan.setup.refine_sigma == doctest::Approx(0.65));
}

TEST_CASE("exclusion: excluded views are bridged, interpolated and flagged; outliers flagged and interpolated") {
    const std::string dir = temp_dir("tilt_exclude");
    // Five real views 0..4 (tilts -4..4) moved by known offsets; view 2 is
    // replaced by a view from far away in the series (a "bad" view).
    const double truth[5][2] = {{-4, 2}, {-2, 1}, {0, 0}, {2, -1}, {4, -2}};
    std::vector<RawFrame> frames;
    const RawFrame base = upsampled_view(45);
    for (int k = 0; k < 5; ++k) {
        const LinearTransform t{1, 0, 0, 1, truth[k][0], truth[k][1], 95.5, 95.5};
        frames.push_back(transform_frame(base, t, base.mean()));
    }
    frames[1] = upsampled_view(5);  // junk in view 1
    write_tiff_stack(dir + "/s.tif", frames);

    // Excluded: the chain bridges 0 -> 2; view 1 gets the interpolated offset.
    StackResult r = run_quiet(dir, tilt_job("s.tif", "{start = -4, step = 2}", "exclude = [1]\nreference = 2"));
    REQUIRE(r.pairs.size() == 3);
    CHECK(r.pairs[0].ref == 0);
    CHECK(r.pairs[0].mov == 2);
    for (int k : {0, 2, 3, 4}) {
        CAPTURE(k);
        // Content at p in the reference is at p + truth in view k.
        CHECK(std::fabs(r.frames[k].offset.dx - truth[k][0]) < 0.3);
        CHECK(std::fabs(r.frames[k].offset.dy - truth[k][1]) < 0.3);
    }
    CHECK(r.frames[1].offset.dx == doctest::Approx(0.5 * (r.frames[0].offset.dx + r.frames[2].offset.dx)));
    CHECK(r.frames[1].status == "excluded (interpolated)");
    const std::vector<std::string> csv = lines_of(read_text(dir + "/out/shifts.csv"));
    CHECK(csv[2].find(",excluded (interpolated)") != std::string::npos);
    CHECK(read_tiff_stack(dir + "/out/aligned.tif").size() == 5);

    // Not excluded: the junk view makes pairs 0-1 and 1-2 stand out; with
    // on_outlier = "interpolate" their shifts come from the good pairs.
    r = run_quiet(dir, tilt_job("s.tif", "{start = -4, step = 2}", "reference = 2\non_outlier = \"interpolate\"\n"));
    int flagged = 0;
    for (const PairResult& p : r.pairs) flagged += p.weak || p.outlier;
    CHECK(flagged >= 1);
    CHECK(r.pairs[2].interpolated == false);
    for (const PairResult& p : r.pairs)
        if (p.weak || p.outlier) CHECK(p.interpolated);
    CHECK(std::fabs(r.frames[4].offset.dx - truth[4][0]) < 0.3);
    const auto j = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(j["pairs"][0]["status"].get<std::string>().find("(interpolated)") != std::string::npos);
}

// The axis is "auto" by default: on views that cannot show it (five within
// 4 degrees of each other) the default falls back to 0 and says so, where
// the same asked for is an error naming the key.
TEST_CASE("tilt axis: the default \"auto\" falls back to 0 on views that cannot show it; asked for, an error") {
    const std::string dir = temp_dir("tilt_axis_default");
    std::vector<RawFrame> frames;
    for (int k = 0; k < 5; ++k) frames.push_back(upsampled_view(43 + k));
    write_tiff_stack(dir + "/s.tif", frames);
    run_quiet(dir, tilt_job("s.tif", "{start = -4, step = 2}", "", "report = false\naligned = false\n"));
    const auto record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(record["plan"]["tilt_axis"] == 0.0);
    CHECK(record["plan"]["tilt_axis_from"] == "none (auto: the views did not show the axis)");
    // The tracks still measure the views about that axis; they do not turn it.
    REQUIRE(record.contains("tilt_axis_tracks"));
    CHECK(record["tilt_axis_tracks"]["applied"] == false);
    CHECK(record["tilt_axis_tracks"]["axis_deg"] == 0.0);
    CHECK_THROWS_WITH_AS(run_quiet(dir, tilt_job("s.tif", "{start = -4, step = 2}", "tilt_axis = \"auto\"")),
                         doctest::Contains("tilt_axis = \"auto\": fewer than two views"), InputError);
}

TEST_CASE("pair checks: robust z-scores and interpolation") {
    const std::vector<Shift> s = {{1, 0}, {1.2, 0.1}, {0.9, -0.1}, {9, 0}, {1.1, 0}, {1, 0.2}};
    const std::vector<double> z = robust_z(s);
    CHECK(z[3] > 5);
    for (int i : {0, 1, 2, 4, 5}) CHECK(z[i] < 1);
    std::vector<Shift> v = s;
    interpolate_flagged(v, {false, false, false, true, false, false});
    CHECK(v[3].dx == doctest::Approx(0.5 * (0.9 + 1.1)));
    std::vector<Shift> ends = {{5, 5}, {1, 1}, {2, 2}, {7, 7}};
    interpolate_flagged(ends, {true, false, false, true});
    CHECK(ends[0].dx == 1);
    CHECK(ends[3].dx == 2);
    const std::vector<Transform> pairs = {Transform::translation(2, 0), Transform::translation(4, 0)};
    CHECK(chain_offsets(5, {0, 2, 4}, pairs, 2)[1].dx == doctest::Approx(-1.0));
    CHECK(chain_offsets(5, {1, 2, 3}, pairs, 2)[4].dx == doctest::Approx(4.0));  // beyond the end
}

TEST_CASE("IMOD: .prexg applied as newstack does reproduces the aligned stack; .prexf chains into .prexg") {
    const std::string dir = temp_dir("tilt_imod");
    // Seven real views with subpixel offsets, in and out as MRC (mode 6).
    std::vector<RawFrame> frames;
    const RawFrame& base = sample_frame(kTilt, 45);
    const double truth[7][2] = {{1.5, -2}, {0.5, -1}, {0, 0}, {-1, 0.5}, {-2.5, 1}, {-3, 2.5}, {-4.5, 3}};
    for (const auto& t : truth) frames.push_back(transform_frame(base, {1, 0, 0, 1, t[0], t[1], 31.5, 31.5}, base.mean()));
    write_mrc_stack(dir + "/tilt.st", frames, 6, 179.9);
    write_text(dir + "/tilt.tlt", "-6.00\n-4.00\n-2.00\n0.00\n2.00\n4.00\n6.00\n");
    run_quiet(dir, "[input]\nstack = \"tilt.st\"\nangles = \"tilt.tlt\"\n[preprocess]\nthreshold = 10.0\n"
                   "bins = 32\n[search]\nwindow = [40, 40]\nmax_shift = 8\n[output]\ndir = \"out\"\n");
    MrcInfo info;
    const Stack aligned = read_mrc_stack(dir + "/out/aligned.mrc", &info);
    CHECK(info.mode == 6);
    CHECK(info.pixel_size[0] == doctest::Approx(179.9).epsilon(1e-6));
    REQUIRE(aligned.size() == 7);

    const std::vector<std::string> prexg = lines_of(read_text(dir + "/out/tilt.prexg"));
    const std::vector<std::string> prexf = lines_of(read_text(dir + "/out/tilt.prexf"));
    REQUIRE(prexg.size() == 7);
    REQUIRE(prexf.size() == 7);
    CHECK(read_text(dir + "/out/tilt.prexg") == read_text(dir + "/out/transforms.xf"));
    for (int k = 0; k < 7; ++k) {
        CAPTURE(k);
        CHECK(prexg[k].size() == 72);  // 4f12.7, 2f12.3
        double a[6];
        REQUIRE(std::sscanf(prexg[k].c_str(), "%lf %lf %lf %lf %lf %lf", &a[0], &a[1], &a[2], &a[3], &a[4], &a[5]) == 6);
        if (k == 0) CHECK(prexf[k] == "   1.0000000   0.0000000   0.0000000   1.0000000       0.000       0.000");
        if (k == 3) CHECK(prexg[k] == "   1.0000000   0.0000000   0.0000000   1.0000000       0.000       0.000");
        // newstack: X' = A (X - c) + D + c; our aligned views must be that.
        const LinearTransform t{a[0], a[1], a[2], a[3], a[4], a[5], 31.5, 31.5};
        const RawFrame expect = transform_frame(frames[k], t, frames[k].mean());
        const auto* e = reinterpret_cast<const std::uint16_t*>(expect.bytes.data());
        const auto* g = reinterpret_cast<const std::uint16_t*>(aligned.frames[k].bytes.data());
        int worst = 0;
        for (int i = 0; i < 64 * 64; ++i) {
            const int x = i % 64, y = i / 64;
            if (x < 6 || y < 6 || x > 57 || y > 57) continue;  // the .prexg rounds D to 0.001 px; borders fill differently
            worst = std::max(worst, std::abs(int(e[i]) - int(g[i])));
        }
        CHECK(worst <= 40);  // of 513..39459: the 0.0005 px rounding of D, at the steepest edge
    }
    // prexf of view k = prexg[k] - prexg[k-1]; summed they give prexg relative to view 0.
    double acc_x = 0, acc_y = 0, g0[6], gk[6];
    std::sscanf(prexg[0].c_str(), "%lf %lf %lf %lf %lf %lf", &g0[0], &g0[1], &g0[2], &g0[3], &g0[4], &g0[5]);
    for (int k = 1; k < 7; ++k) {
        double f[6];
        std::sscanf(prexf[k].c_str(), "%lf %lf %lf %lf %lf %lf", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5]);
        acc_x += f[4];
        acc_y += f[5];
        std::sscanf(prexg[k].c_str(), "%lf %lf %lf %lf %lf %lf", &gk[0], &gk[1], &gk[2], &gk[3], &gk[4], &gk[5]);
        CHECK(std::fabs(acc_x - (gk[4] - g0[4])) < 0.003 * k);
        CHECK(std::fabs(acc_y - (gk[5] - g0[5])) < 0.003 * k);
    }
    // The offsets themselves: D = -(truth - truth_ref), within the ~0.25 px
    // that a parabola through MI samples leaves at half-pixel shifts of a
    // 40-pixel window.
    for (int k = 0; k < 7; ++k) {
        std::sscanf(prexg[k].c_str(), "%lf %lf %lf %lf %lf %lf", &gk[0], &gk[1], &gk[2], &gk[3], &gk[4], &gk[5]);
        CHECK(std::fabs(gk[4] + (truth[k][0] - truth[3][0])) < 0.3);
        CHECK(std::fabs(gk[5] + (truth[k][1] - truth[3][1])) < 0.3);
    }
}

TEST_CASE("report: report.html is self-contained: inline plots and PNG thumbnails, nothing fetched") {
    const std::string dir = temp_dir("tilt_report");
    run_quiet(dir, sample_config("sample_tilt_series", "out"));
    const std::string html = read_text(dir + "/out/report.html");
    CHECK(html.find("http://") == std::string::npos);  // nothing fetched
    CHECK(html.find("https://") == std::string::npos);
    std::size_t svgs = 0, imgs = 0;
    for (std::size_t p = 0; (p = html.find("<svg class=\"plot\"", p)) != std::string::npos; ++p) ++svgs;
    for (std::size_t p = 0; (p = html.find("src=\"data:image/png;base64,", p)) != std::string::npos; ++p) ++imgs;
    CHECK(svgs == 3);
    CHECK(imgs == 8);
    // The first thumbnail is a PNG of at most 192 pixels a side.
    const std::size_t b = html.find("base64,") + 7, e = html.find('"', b);
    CHECK(e - b > 100);
    CHECK(html.substr(b, 8) == "iVBORw0K");  // base64 of the PNG signature
}

TEST_CASE("report: a headless browser renders every plot and image") {
    const char* chromium = nullptr;
    for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
        if (access(c, X_OK) == 0) chromium = c;
    if (!chromium) return skip_test("no Chromium (Debian's chromium checks the report's rendering)");
    const std::string dir = temp_dir("tilt_report_render");
    run_quiet(dir, sample_config("sample_tilt_series", "out"));
    const std::string dom = dir + "/dom.html";
    const std::string cmd = std::string("timeout 90 ") + chromium +
                            " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                            " --disable-background-networking --disable-component-update --disable-sync"
                            " --user-data-dir=" + dir + "/chromium --virtual-time-budget=5000 --dump-dom file://" +
                            dir + "/out/report.html > " + dom + " 2>/dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    CHECK(read_text(dom).find("data-rendered=\"3/3 plots, 8/8 images\"") != std::string::npos);
}

TEST_CASE("png: thumbnails encode to PNG and decode back") {
    Image<std::uint8_t> im(37, 21);
    for (int y = 0; y < 21; ++y)
        for (int x = 0; x < 37; ++x) im.at(x, y) = std::uint8_t(x * 7 + y * 3);
    const std::vector<unsigned char> png = encode_png_gray(im);
    CHECK(png.size() > 8);
    CHECK(png[1] == 'P');
    const Image<std::uint8_t> back = decode_png_gray(png);
    CHECK(back.width == 37);
    CHECK(back.pixels == im.pixels);
    CHECK(base64({'M', 'a', 'n'}) == "TWFu");
    CHECK(base64({'M', 'a'}) == "TWE=");
    CHECK(base64({'M'}) == "TQ==");
}

TEST_CASE("tilt series on the CUDA backend: stretched pairs, an excluded view and flags give the CPU's shifts.csv") {
    if (skip_without_gpu()) return;
    const std::string dir = temp_dir("tilt_cuda");
    std::vector<RawFrame> frames;
    const RawFrame base = upsampled_view(80);
    const double tilts[5] = {60, 62, 64, 66, 68};
    for (int k = 0; k < 5; ++k) frames.push_back(tilted_copy(base, 60, tilts[k], 1.5 * k, -k));
    frames[3] = upsampled_view(20);
    write_tiff_stack(dir + "/s.tif", frames);
    std::string csv[2];
    for (int b = 0; b < 2; ++b) {
        write_text(dir + "/job.toml", tilt_job("s.tif", "{start = 60, step = 2}", "exclude = [3]\nreference = 0\n") +
                                          "[device]\nbackend = \"" + (b ? "cuda" : "cpu") + "\"\n");
        RunOptions quiet;
        quiet.verbosity = Verbosity::quiet;
        run_stack(load_config(dir + "/job.toml"), quiet);
        csv[b] = read_text(dir + "/out/shifts.csv");
    }
    CHECK(csv[1] == csv[0]);
}
