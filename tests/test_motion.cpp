// Rigid and similarity alignment (`[search] transform`): real frames turned
// by known angles come back within the tolerances, the CPU and CUDA
// twins agree, and every output composes the rotation (IMOD files included).
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "../pipelines/stack.hpp"
#include "../pipelines/stages/flag_pairs.hpp"
#include "../pipelines/stages/search_motion.hpp"
#include "../src/alignment/apply.hpp"
#include "../src/alignment/motion.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

struct Motion {
    double angle, dx, dy;
};

// A 256x256 crop of a real embryo frame, turned and moved by `truth` (the
// reference's content at X lies in frame k at R_k (X - c) + c + d_k).
// With `noise`: Gaussian noise of that standard deviation (grey levels) added, seeded;
// with `invert`: every second frame's contrast inverted (255 - value).
std::string turned_series(const std::string& dir, const std::vector<Motion>& truth, double noise = 0,
                          bool invert = false) {
    const RawFrame base = crop(sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 8), 128, 128, 256, 256);
    std::mt19937 rng(11);
    std::normal_distribution<double> grain(0, noise > 0 ? noise : 1);
    std::vector<RawFrame> frames;
    for (const Motion& m : truth) {
        const RawFrame turned = fourier_rotated(base, m.angle, m.dx, m.dy);
        const bool inverted = invert && frames.size() % 2;
        if (noise <= 0 && !inverted) {
            frames.push_back(turned);
            continue;
        }
        const ImageF im = turned.to_float();
        RawFrame f{PixelType::f32, im.width, im.height, 1, std::vector<unsigned char>(im.pixels.size() * 4)};
        float* px = reinterpret_cast<float*>(f.bytes.data());
        for (std::size_t i = 0; i < im.pixels.size(); ++i) {
            px[i] = im.pixels[i] + (noise > 0 ? float(grain(rng)) : 0.0f);
            if (inverted) px[i] = 255.0f - px[i];
        }
        frames.push_back(f);
    }
    const std::string path = dir + "/turned.tif";
    write_tiff_stack(path, frames);
    return path;
}

StackResult run_rigid(const std::string& dir, const std::string& stack, const std::string& backend,
                      const std::string& search = "transform = \"rigid\"", bool report = false) {
    write_text(dir + "/job.toml", "[input]\nstack = \"" + stack + "\"\n[search]\nmax_shift = 8\n" + search +
                                      "\n[alignment]\nreference = 0\n[output]\ndir = \"" + dir +
                                      "/out\"\nreport = " + (report ? "true" : "false") + "\n[device]\nbackend = \"" + backend + "\"\n");
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    return run_stack(load_config(dir + "/job.toml"), quiet);
}

// The largest distance between where the found and the true transform put
// the frame's centre and its four corners.
double worst_corner_error(const Transform& found, const Transform& truth, int w, int h) {
    double worst = 0;
    for (double x : {0.0, (w - 1) / 2.0, w - 1.0})
        for (double y : {0.0, (h - 1) / 2.0, h - 1.0}) {
            const double u = x - (w - 1) / 2.0, v = y - (h - 1) / 2.0;
            const double ex = found.a11 * u + found.a12 * v + found.dx - (truth.a11 * u + truth.a12 * v + truth.dx);
            const double ey = found.a21 * u + found.a22 * v + found.dy - (truth.a21 * u + truth.a22 * v + truth.dy);
            worst = std::max(worst, std::hypot(ex, ey));
        }
    return worst;
}

const std::vector<Motion> kTruth = {{0, 0, 0}, {1.3, 2.4, -1.7}, {-2.65, -3.2, 0.6}, {4.1, 1.1, 3.45}, {-6.3, 0.25, -2.5}};

}  // namespace

TEST_CASE("motion: the candidate grid is symmetric and includes the identity") {
    MotionSearch m;
    m.model = MotionModel::rigid;
    m.angle_range = 3, m.angle_step = 1.5;
    CHECK(m.angles() == std::vector<double>{-3, -1.5, 0, 1.5, 3});
    CHECK(m.scales() == std::vector<double>{1});
    m.model = MotionModel::similarity;
    m.scale_range = 0.02, m.scale_step = 0.01;
    CHECK(m.scales().size() == 5);
    CHECK(m.scales()[2] == 1);
    const Transform t = rotation_scale(12.5, 1.04, 3, -2);
    CHECK(angle_of(t) == doctest::Approx(12.5));
    CHECK(scale_of(t) == doctest::Approx(1.04));
}

TEST_CASE("motion: a real frame turned by known angles is found within 0.05 deg and 0.1 px (CPU)") {
    const std::string dir = temp_dir("motion_rigid");
    const StackResult r = run_rigid(dir, turned_series(dir, kTruth), "cpu");
    for (std::size_t k = 0; k < kTruth.size(); ++k) {
        const Transform truth = rotation_scale(kTruth[k].angle, 1, kTruth[k].dx, kTruth[k].dy);
        const Transform& found = r.frames[k].offset;
        INFO("frame " << k << ": angle " << angle_of(found) << " (truth " << kTruth[k].angle << "), centre (" << found.dx
                      << ", " << found.dy << ") (truth " << kTruth[k].dx << ", " << kTruth[k].dy << ")");
        CHECK(std::fabs(angle_of(found) - kTruth[k].angle) <= 0.05);
        CHECK(std::hypot(found.dx - truth.dx, found.dy - truth.dy) <= 0.1);
        CHECK(worst_corner_error(found, truth, 256, 256) <= 0.15);
    }
    CHECK(r.quality.verdict == Verdict::ok);  // and its pairs above chance (pair_confidence.hpp)
    CHECK(r.quality.pairs_not_ok <= 1);
}

TEST_CASE("motion: refine_metric = \"ncc\" puts noisy real frames' centres closer to the truth than MI does") {
    // Frames of one contrast with noise (about 5 % of the range): NCC of the
    // values is the better estimate there; MI's 32 bins add their own
    // variance. On these 256-px crops the angles come out alike (seeds 3-8:
    // NCC 0.006-0.010 deg, MI 0.007-0.010) and the centres do not (NCC
    // 0.011-0.016 px, MI 0.018-0.026); on 384-px frames NCC's angles are
    // 1.6-3x closer too (bench/rigid_peers.py).
    // Twelve frames on a seeded random walk (steps of 1 degree and 2 px).
    std::mt19937 rng(3);
    std::normal_distribution<double> turn(0, 1), move(0, 2);
    std::vector<Motion> truth = {{0, 0, 0}};
    while (truth.size() < 12)
        truth.push_back({truth.back().angle + turn(rng), truth.back().dx + move(rng), truth.back().dy + move(rng)});
    const std::string dir = temp_dir("motion_ncc");
    const std::string stack = turned_series(dir, truth, 12.0);
    const StackResult mi =
        run_rigid(temp_dir("motion_ncc_mi"), stack, "cpu", "transform = \"rigid\"\nrefine_metric = \"mi\"");
    const StackResult ncc =
        run_rigid(temp_dir("motion_ncc_ncc"), stack, "cpu", "transform = \"rigid\"\nrefine_metric = \"ncc\"");
    // The default ("auto") finds these values linearly related and refines every pair as "ncc" does.
    const StackResult defaults = run_rigid(temp_dir("motion_ncc_auto"), stack, "cpu");
    REQUIRE(defaults.pairs.size() == ncc.pairs.size());
    for (std::size_t i = 0; i < ncc.pairs.size(); ++i) {
        REQUIRE(defaults.pairs[i].linear_r);
        CHECK(*defaults.pairs[i].linear_r >= 0.9);
        CHECK(defaults.pairs[i].shift.a12 == ncc.pairs[i].shift.a12);
        CHECK(defaults.pairs[i].shift.dx == ncc.pairs[i].shift.dx);
        CHECK_FALSE(ncc.pairs[i].linear_r);
    }
    auto rms = [&](const StackResult& r, bool angle) {
        double sum = 0;
        for (std::size_t k = 0; k < truth.size(); ++k) {
            const Transform& f = r.frames[k].offset;
            const double e = angle ? angle_of(f) - truth[k].angle : std::hypot(f.dx - truth[k].dx, f.dy - truth[k].dy);
            sum += e * e;
        }
        return std::sqrt(sum / truth.size());
    };
    MESSAGE("angle RMS: mi " << rms(mi, true) << " deg, ncc " << rms(ncc, true) << " deg; centre RMS: mi "
                             << rms(mi, false) << " px, ncc " << rms(ncc, false) << " px");
    for (const StackResult* r : {&mi, &ncc})
        for (const PairResult& p : r->pairs) CHECK_FALSE(p.unreliable);  // the skip pairs agree
    CHECK(rms(ncc, false) < rms(mi, false));
    CHECK(rms(ncc, true) <= 0.02);
    CHECK(rms(ncc, false) <= 0.05);
}

TEST_CASE("motion: refine_metric \"auto\" refines inverted-contrast pairs by NCC of the opposite sign, and unrelated "
          "values by MI") {
    // Every second frame's contrast inverted: its neighbour pairs correlate
    // by r near -1, the skip pairs (i, i+2) by r near +1. "ncc" alone
    // maximises r and cannot align the neighbours; "auto" maximises -r there.
    const std::string dir = temp_dir("motion_auto");
    const std::string stack = turned_series(dir, kTruth, 0, true);
    const std::string run = temp_dir("motion_auto_run");
    const StackResult r = run_rigid(run, stack, "cpu");
    for (std::size_t k = 0; k < kTruth.size(); ++k) {
        const Transform truth = rotation_scale(kTruth[k].angle, 1, kTruth[k].dx, kTruth[k].dy);
        const Transform& found = r.frames[k].offset;
        CAPTURE(k);
        CHECK(std::fabs(angle_of(found) - kTruth[k].angle) <= 0.05);
        CHECK(worst_corner_error(found, truth, 256, 256) <= 0.15);
    }
    for (const PairResult& p : r.pairs) {
        REQUIRE(p.linear_r);
        CHECK(*p.linear_r <= -0.9);
        CHECK_FALSE(p.unreliable);
    }
    const nlohmann::json j = nlohmann::json::parse(read_text(run + "/out/run.json"));
    CHECK(j["pairs"][0]["refined_with"] == "ncc (inverted)");
    CHECK(j["skip_pairs"][0]["refined_with"] == "ncc");
    const StackResult ncc =
        run_rigid(temp_dir("motion_auto_ncc"), stack, "cpu", "transform = \"rigid\"\nrefine_metric = \"ncc\"");
    double worst = 0;
    for (std::size_t k = 0; k < kTruth.size(); ++k)
        worst = std::max(worst, std::fabs(angle_of(ncc.frames[k].offset) - kTruth[k].angle));
    CHECK(worst > 0.05);

    // A pair whose values are not linearly related is refined by the search's metric.
    CHECK(auto_refined_with(SearchSetup{}, 0.5) == "mi");
    CHECK(auto_refined_with(SearchSetup{}, -0.95) == "ncc (inverted)");
    CHECK(auto_refined_with(SearchSetup{}, 0.95) == "ncc");
}

TEST_CASE("motion: skip pairs whose composed shift is beyond the search range are still measured") {
    // Steps of about 6 px with max_shift 8 and the window as large as the
    // range allows (no room around it): a skip pair's range cannot be
    // centred on its prediction (about 12 px) inside the frame, so its
    // turned view is moved there.
    const std::vector<Motion> truth = {{0, 0, 0}, {0.8, 6.2, -5.6}, {1.9, 12.1, -11.4}, {1.2, 18.3, -16.9}};
    const std::string dir = temp_dir("motion_far_skips");
    const StackResult r = run_rigid(dir, turned_series(dir, truth), "cpu",
                                    "transform = \"rigid\"\nangle_range = 3\nwindow = [240, 240]");
    // A skip that missed would be left out and its pairs flagged.
    for (const PairResult& p : r.pairs) CHECK_FALSE(p.unreliable);
    const nlohmann::json j = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    REQUIRE(j["skip_pairs"].size() == 2);
    for (const auto& skip : j["skip_pairs"]) CHECK(skip["residual"].get<double>() < 0.1);
    for (std::size_t k = 0; k < truth.size(); ++k) {
        CAPTURE(k);
        CHECK(std::fabs(angle_of(r.frames[k].offset) - truth[k].angle) <= 0.05);
        CHECK(std::hypot(r.frames[k].offset.dx - truth[k].dx, r.frames[k].offset.dy - truth[k].dy) <= 0.1);
    }
}

TEST_CASE("motion: the CUDA twin moves and turns far skip pairs' views as the CPU does: the same shifts.csv") {
    if (skip_without_gpu()) return;
    const std::vector<Motion> truth = {{0, 0, 0}, {0.8, 6.2, -5.6}, {1.9, 12.1, -11.4}, {1.2, 18.3, -16.9}};
    const std::string dir = temp_dir("motion_far_skips_twins");
    const std::string stack = turned_series(dir, truth), keys = "transform = \"rigid\"\nangle_range = 3\nwindow = [240, 240]";
    const std::string cpu = temp_dir("motion_far_skips_cpu"), gpu = temp_dir("motion_far_skips_cuda");
    run_rigid(cpu, stack, "cpu", keys);
    run_rigid(gpu, stack, "cuda", keys);
    CHECK(read_text(gpu + "/out/shifts.csv") == read_text(cpu + "/out/shifts.csv"));
}

TEST_CASE("motion: on_outlier = \"interpolate\" gives a flagged rigid pair its neighbours' turn, not none") {
    PairSearch search;
    for (int i = 0; i < 6; ++i) {
        PairResult p;
        p.ref = i, p.mov = i + 1;
        p.shift = rotation_scale(1.0 + 0.1 * i, 1, i == 3 ? 40 : 1, 1);  // pair 3's shift stands out
        search.pairs.push_back(p);
    }
    PairFlagRules rules;
    rules.min_sharpness = 0;
    rules.on_outlier = OnOutlier::interpolate;
    flag_pairs(rules, search, Verbosity::quiet);
    REQUIRE(search.pairs[3].interpolated);
    CHECK(angle_of(search.pairs[3].shift) == doctest::Approx(1.3));
    CHECK(scale_of(search.pairs[3].shift) == doctest::Approx(1.0));
    CHECK(search.pairs[3].shift.dx == doctest::Approx(1.0));
    CHECK(angle_of(search.pairs[2].shift) == doctest::Approx(1.2));  // unflagged: as measured
}

TEST_CASE("motion: the CUDA twin finds the CPU's candidates and refines to the same transforms") {
    if (skip_without_gpu()) return;
    const std::string dir = temp_dir("motion_twins");
    const std::string stack = turned_series(dir, kTruth);
    for (const std::string refine : {"", "\nrefine_metric = \"mi\"", "\nrefine_metric = \"ncc\""}) {
        CAPTURE(refine);
        const std::string similarity = "transform = \"similarity\"\nscale_range = 0.02" + refine;
        const StackResult cpu = run_rigid(temp_dir("motion_twins_cpu"), stack, "cpu", similarity);
        const StackResult gpu = run_rigid(temp_dir("motion_twins_gpu"), stack, "cuda", similarity);
        REQUIRE(cpu.pairs.size() == gpu.pairs.size());
        for (std::size_t i = 0; i < cpu.pairs.size(); ++i) {
            CAPTURE(i);
            CHECK(cpu.pairs[i].peak.dx == gpu.pairs[i].peak.dx);
            CHECK(cpu.pairs[i].peak.dy == gpu.pairs[i].peak.dy);
            CHECK(cpu.pairs[i].peak.mi == doctest::Approx(gpu.pairs[i].peak.mi).epsilon(1e-12));
            CHECK(cpu.pairs[i].linear_r == gpu.pairs[i].linear_r);  // from the same integer moments
            // Identical fixed-point statistics from the same start (the grid
            // point): the refinement takes one path on both.
            const Transform& a = cpu.pairs[i].shift;
            const Transform& b = gpu.pairs[i].shift;
            CHECK(a.a11 == b.a11);
            CHECK(a.a12 == b.a12);
            CHECK(a.dx == b.dx);
            CHECK(a.dy == b.dy);
        }
    }
}

namespace {
std::vector<std::array<double, 6>> xf_lines(const std::string& text) {
    std::vector<std::array<double, 6>> out;
    std::istringstream in(text);
    std::array<double, 6> a;
    while (in >> a[0] >> a[1] >> a[2] >> a[3] >> a[4] >> a[5]) out.push_back(a);
    return out;
}
}  // namespace

TEST_CASE("motion: IMOD files carry the rotation: .xf applied as newstack does gives aligned.tif; .prexf chains into .prexg") {
    const std::string dir = temp_dir("motion_imod");
    const std::string stack = turned_series(dir, kTruth);
    const StackResult found = run_rigid(dir, stack, "cpu", "transform = \"rigid\"", true);
    // The report plots the angles too.
    CHECK(read_text(dir + "/out/report.html").find("<svg class=\"plot\" id=\"angle\"") != std::string::npos);
    const Stack input = read_tiff_stack(stack);
    const Stack aligned = read_tiff_stack(dir + "/out/aligned.tif");
    const auto xf = xf_lines(read_text(dir + "/out/transforms.xf"));
    const auto prexf = xf_lines(read_text(dir + "/out/turned.prexf"));
    REQUIRE(xf.size() == kTruth.size());
    REQUIRE(prexf.size() == kTruth.size());
    const double c = 127.5;
    for (std::size_t k = 0; k < kTruth.size(); ++k) {
        CAPTURE(k);
        const auto& a = xf[k];
        // The .xf undoes the frame's rotation as found (to its printed digits;
        // how close that is to the truth is the tests above).
        CHECK(std::fabs(std::atan2(a[2], a[0]) * 180 / M_PI + angle_of(found.frames[k].offset)) <= 1e-4);
        CHECK(std::fabs(angle_of(found.frames[k].offset) - kTruth[k].angle) <= 0.05);
        const RawFrame expect = transform_frame(input.frames[k], {a[0], a[1], a[2], a[3], a[4], a[5], c, c}, 0);
        const ImageF e = expect.to_float(), g = aligned.frames[k].to_float();
        double worst = 0, range = 0;
        for (int y = 40; y < 216; ++y)
            for (int x = 40; x < 216; ++x) {
                worst = std::max(worst, double(std::fabs(e.at(x, y) - g.at(x, y))));
                range = std::max(range, double(std::fabs(g.at(x, y))));
            }
        CHECK(worst <= 1e-3 * range);  // the .xf's rounding of D to 0.001 px
    }
    // g_k = g_(k-1) after f_k (xftoxg): apply f first, then g.
    std::array<double, 6> g = prexf[0];
    for (std::size_t k = 1; k < kTruth.size(); ++k) {
        const auto& f = prexf[k];
        const std::array<double, 6> next = {g[0] * f[0] + g[1] * f[2], g[0] * f[1] + g[1] * f[3],
                                            g[2] * f[0] + g[3] * f[2], g[2] * f[1] + g[3] * f[3],
                                            g[0] * f[4] + g[1] * f[5] + g[4], g[2] * f[4] + g[3] * f[5] + g[5]};
        g = next;
        for (int i = 0; i < 4; ++i) CHECK(std::fabs(g[i] - xf[k][i]) <= 1e-6 * k);
        for (int i = 4; i < 6; ++i) CHECK(std::fabs(g[i] - xf[k][i]) < 0.002 * k);
    }
}

TEST_CASE("motion: what cannot be combined is refused with the key named") {
    const std::string dir = temp_dir("motion_refused");
    const std::string stack = turned_series(dir, {{0, 0, 0}, {1, 0, 0}});
    auto plan_error = [&](const std::string& body) {
        write_text(dir + "/job.toml", "[input]\nstack = \"" + stack + "\"\n" + body);
        try {
            plan_stack(load_config(dir + "/job.toml"), RunOptions{});
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(plan_error("angles = {start = -2, step = 2}\n[search]\ntransform = \"rigid\"\n")
              .find("[search] transform: \"rigid\" with tilt angles needs cosine_stretch = false") != std::string::npos);
    CHECK(plan_error("[search]\ntransform = \"rigid\"\nmethod = \"mtb-projection\"\n").find("needs method = \"window\"") !=
          std::string::npos);
    CHECK(plan_error("[search]\ntransform = \"rigid\"\ncoarse_to_fine = true\n")
              .find("[search] coarse_to_fine: searches shifts by the window method only") != std::string::npos);
    CHECK(plan_error("angles = {start = -2, step = 2}\n[search]\ncoarse_to_fine = true\n").empty());
    CHECK(plan_error("angles = {start = -2, step = 2}\n[search]\ncoarse_to_fine = true\n[alignment]\ncosine_stretch = false\n")
              .empty());
    CHECK(plan_error("[search]\ncoarse_to_fine = true\nwindow = [12, 40]\nmax_shift = 4\n")
              .find("[search] coarse_to_fine: the 12x40 window is too small") != std::string::npos);
    CHECK(plan_error("[alignment]\ntilt_axis = \"auto\"\n").find("[alignment] tilt_axis: \"auto\" estimates a tilt series") !=
          std::string::npos);
    CHECK(plan_error("angles = {start = -2, step = 2}\n[search]\ntransform = \"rigid\"\n[alignment]\ncosine_stretch = false\n")
              .empty());
}
