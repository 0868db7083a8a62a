// Projection matching of tilt series: the tomography kernels' twins and
// their arithmetic, and the stage end to end on a tilt series simulated
// from the real zebrafish volume (sample_data) with known jitter.
#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "../kernels/tomo/tomo.hpp"
#include "../pipelines/stack.hpp"
#include "../src/alignment/projection_views.hpp"
#include "../src/alignment/sine_mode.hpp"
#include "../src/config/config.hpp"
#include "../src/core/error.hpp"
#include "../src/core/interrupt.hpp"
#include "../src/core/progress.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

const char* kFish = "sample_data/fish1_pre_anatomy_41x83x166.tif";

struct Simulated {
    std::vector<double> angles, jx, jy;
};

// 41 views, -60..60 degrees, each jittered by up to 3 px across the axis
// and 2 px along it; written with its .tlt into `dir`.
Simulated simulate(const std::string& dir, unsigned seed) {
    Simulated s;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> ux(-3, 3), uy(-2, 2);
    std::vector<RawFrame> views;
    std::string tlt;
    for (int k = 0; k < 41; ++k) {
        s.angles.push_back(-60 + 3 * k);
        s.jx.push_back(ux(rng));
        s.jy.push_back(uy(rng));
        views.push_back(project_volume(sample_volume(kFish), s.angles.back(), s.jx.back(), s.jy.back()));
        tlt += std::to_string(s.angles.back()) + "\n";
    }
    write_tiff_stack(dir + "/series.tif", views);
    std::string truth = "angle,jx,jy\n";
    for (int k = 0; k < 41; ++k)
        truth += std::to_string(s.angles[k]) + "," + std::to_string(s.jx[k]) + "," + std::to_string(s.jy[k]) + "\n";
    write_text(dir + "/truth.csv", truth);
    write_text(dir + "/series.tlt", tlt);
    return s;
}

std::string job(const std::string& dir, const std::string& alignment, bool report = false) {
    return "[input]\nstack = \"" + dir + "/series.tif\"\nangles = \"" + dir + "/series.tlt\"\n"
           "[search]\nmax_shift = 8\n[alignment]\n" + alignment + "\n[output]\ndir = \"" + dir + "/out\"\n"
           "aligned = false\nreport = " + (report ? "true" : "false") + "\n";
}

StackResult run_job(const std::string& dir, const std::string& alignment, BackendRequest backend, bool report = false) {
    write_text(dir + "/job.toml", job(dir, alignment, report));
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    quiet.backend = backend;
    return run_stack(load_config(dir + "/job.toml"), quiet);
}

// Gauge-free RMS error of the offsets against the jitter.
double rms_error(const StackResult& r, const Simulated& s) {
    std::vector<double> across, along;
    for (std::size_t k = 0; k < s.angles.size(); ++k)
        across.push_back(r.frames[k].offset.dx - s.jx[k]), along.push_back(r.frames[k].offset.dy - s.jy[k]);
    return gauge_free_rms(across, along, s.angles);
}

}  // namespace

TEST_CASE("tomo: weights, ramp taps and the leave-one-out reprojection's arithmetic") {
    const TomoGeometry g = tomo_geometry(8, 1, 8, {-60, -30, 0, 30, 60}, {true, true, true, false, true});
    CHECK(g.weight[3] == 0.0f);
    CHECK(g.weight[2] == doctest::Approx(45 * M_PI / 180).epsilon(1e-6));   // neighbours -30 and 60 (30 left out)
    CHECK(g.weight[0] == doctest::Approx(30 * M_PI / 180).epsilon(1e-6));   // an end counts its one gap
    const std::vector<float> h = ramp_taps(4);
    CHECK(h[0] == doctest::Approx(2 / (M_PI * M_PI)));
    CHECK(h[1] == doctest::Approx(-2 / (3 * M_PI * M_PI)));
    // One view alone: the volume is its own back-projection, so its
    // leave-one-out reprojection is 0 everywhere.
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1, 1);
    const TomoGeometry one = tomo_geometry(16, 3, 10, {20}, {true});
    std::vector<float> views(one.view_size());
    for (float& v : views) v = u(rng);
    const Reprojection r = cpu::reproject_leave_one_out(views, one);
    for (float p : r.projections) CHECK(std::fabs(p) < 1e-6f);
    float largest = 0;
    for (float v : r.volume) largest = std::max(largest, std::fabs(v));
    CHECK(largest > 1e-3f);
}

// A volume whose slices at depth z carry energy profile(z) (each voxel
// sqrt of it, over 4 x 2 voxels a slice): what specimen_thickness reads.
TEST_CASE("tomo: the specimen's thickness holds a weaker layer at another depth, not the main layer's fall-off") {
    const int depth = 101;
    const TomoGeometry g = tomo_geometry(4, 2, depth, {-30, 0, 30}, {true, true, true});
    auto volume_of = [&](auto profile) {
        std::vector<float> v(g.volume_size());
        for (int y = 0; y < g.rows; ++y)
            for (int z = 0; z < depth; ++z)
                for (int x = 0; x < g.width; ++x)
                    v[(std::size_t(y) * depth + z) * g.width + x] = float(std::sqrt(profile(z - 50.0)));
        return v;
    };
    auto layer = [](double z, double at) { return std::exp(-0.5 * (z - at) * (z - at) / 4.0); };
    // one layer 5 px off the middle: its half-peak slices reach 5 + 2.35 px,
    // 1.5x that either side of the middle
    const int one = specimen_thickness(volume_of([&](double z) { return 0.02 + layer(z, 5); }), g);
    CHECK(one == 2 * int(std::ceil(1.5 * 7.5)));
    // and a second at -32 with 0.37 of its energy: held, far from the middle
    const int two = specimen_thickness(volume_of([&](double z) { return 0.02 + layer(z, 5) + 0.37 * layer(z, -32); }), g);
    CHECK(two >= 2 * int(std::ceil(1.5 * 32.5)));
    // a slow fall-off beyond the half-peak (streaks), no valley: not a layer
    const int tail = specimen_thickness(
        volume_of([&](double z) { return std::max(layer(z, 5), 0.45 * std::exp(-std::fabs(z - 5) / 20.0)); }), g);
    CHECK(tail == one);
}

// The CPU twin's shortcuts against the functions they stand for, value by
// value: the row filter four outputs at a time (a width that is not a
// multiple of 4), and the reprojection beyond 45 degrees, which steps only
// through the columns where a thin slab is, against every column.
TEST_CASE("tomo: the CPU's row filter and its slab-crossing reprojection give the plain sums' values") {
    const std::vector<double> angles = {-70, -50, -20, 0, 35, 55, 80};
    const TomoGeometry g = tomo_geometry(37, 2, 5, angles, std::vector<bool>(angles.size(), true));
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> views(g.view_size() * g.views);
    for (float& v : views) v = u(rng);
    const Reprojection r = cpu::reproject_leave_one_out(views, g);
    const std::vector<float> taps = ramp_taps(g.width);
    int filtered_differ = 0, projected_differ = 0, beyond_45 = 0;
    for (int v = 0; v < g.views; ++v)
        for (int y = 0; y < g.rows; ++y) {
            const std::size_t row = (std::size_t(v) * g.rows + y) * g.width;
            for (int x = 0; x < g.width; ++x)
                filtered_differ += r.filtered[row + x] != ramp_filtered_at(&views[row], g.width, taps.data(), x, g.weight[v]);
            const float c = g.cos_t[v], s = g.sin_t[v];
            if (std::fabs(c) >= std::fabs(s)) continue;
            const float cx = 0.5f * float(g.width - 1), cz = 0.5f * float(g.thickness - 1);
            for (int p = 0; p < g.width; ++p) {
                float sum = 0.0f;
                for (int x = 0; x < g.width; ++x) {
                    const float zf = (float(p) - cx - (float(x) - cx) * c) / s + cz;
                    const float f = std::floor(zf), t = zf - f;
                    const float a = volume_without_view(r.volume.data(), &r.filtered[row], g.width, g.thickness, y, x,
                                                        int(f), cx, cz, c, s);
                    const float b = volume_without_view(r.volume.data(), &r.filtered[row], g.width, g.thickness, y, x,
                                                        int(f) + 1, cx, cz, c, s);
                    sum += a + t * (b - a);
                }
                ++beyond_45;
                projected_differ += r.projections[row + p] != sum / std::fabs(s);
            }
        }
    CHECK(filtered_differ == 0);
    CHECK(beyond_45 == 4 * 2 * 37);
    CHECK(projected_differ == 0);
}

TEST_CASE("tomo: a reprojection of real views' reconstruction resembles the view left out") {
    // Projections of the real volume at 31 angles; the view at 0 degrees is
    // left out of its own reprojection, which must still correlate with it.
    std::vector<double> angles;
    std::vector<float> views;
    const AxisGrid grid = axis_grid(166, 83, 0, 1);
    for (int k = 0; k < 31; ++k) {
        angles.push_back(-60 + 4 * k);
        const ImageF v = axis_view(project_volume(sample_volume(kFish), angles.back(), 0, 0), Transform{}, grid);
        views.insert(views.end(), v.pixels.begin(), v.pixels.end());
    }
    const TomoGeometry g = tomo_geometry(grid.width, grid.rows, 60, angles, std::vector<bool>(31, true));
    const Reprojection r = cpu::reproject_leave_one_out(views, g);
    const int k = 15;  // 0 degrees
    const std::size_t at = std::size_t(k) * g.view_size();
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    const int n = int(g.view_size());
    for (int i = 0; i < n; ++i) {
        const double a = views[at + i], b = r.projections[at + i];
        sa += a, sb += b, saa += a * a, sbb += b * b, sab += a * b;
    }
    const double ncc = (sab - sa * sb / n) / std::sqrt((saa - sa * sa / n) * (sbb - sb * sb / n));
    MESSAGE("correlation of the 0-degree view with its leave-one-out reprojection: " << ncc);
    CHECK(ncc > 0.85);
}

// The field every view covers: views moved by up to 2 px on a grid the
// frame's own size leave 2 px on each side; the grid turned 6 degrees
// against its frame loses its corners' rows; the taper keeps what is
// inside and zeroes what is not.
TEST_CASE("projection views: the views' common field, and the taper to it") {
    const AxisGrid straight = axis_grid(64, 48, 0.0, 1);
    const GridRect all = covered_rect(straight, {Transform::translation({0, 0})});
    CHECK((all.x == 0 && all.y == 0 && all.width == 64 && all.height == 48));
    const GridRect moved = covered_rect(straight, {Transform::translation({2, -1}), Transform::translation({-2, 1})});
    CHECK((moved.x == 2 && moved.y == 1 && moved.width == 60 && moved.height == 46));
    // 84 degrees: the grid's rows run along the frame's x; the frame's
    // corners cut the grid's end rows, not the middle ones.
    const AxisGrid turned = axis_grid(48, 64, 84.0, 1);
    const GridRect cut = covered_rect(turned, {Transform::translation({0, 0})});
    CHECK(cut.width * cut.height > 0);
    CHECK(cut.width * cut.height < turned.width * turned.rows);
    CHECK(cut.x + cut.width / 2 == turned.width / 2);
    std::vector<float> view(std::size_t(straight.width) * straight.rows, 1.0f);
    taper_to_rect(view.data(), straight, moved, 4);
    CHECK(view[0] == 0.0f);                                  // outside
    CHECK(view[std::size_t(1) * 64 + 2] < 1.0f);             // on the edge: the ramp
    CHECK(view[std::size_t(24) * 64 + 32] == 1.0f);          // inside
}

TEST_CASE("tomo: the CUDA twin gives the CPU's filtered views, volume and reprojections bit for bit") {
    if (skip_without_gpu()) return;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-100, 100);
    for (const auto& [w, rows, thickness] : {std::array<int, 3>{37, 5, 23}, std::array<int, 3>{64, 9, 64}}) {
        std::vector<double> angles;
        for (int k = 0; k < 29; ++k) angles.push_back(-84 + 6 * k);  // |cos| < |sin| too
        std::vector<bool> used(angles.size(), true);
        used[7] = false;
        const TomoGeometry g = tomo_geometry(w, rows, thickness, angles, used);
        std::vector<float> views(g.view_size() * g.views);
        for (float& v : views) v = u(rng);
        const Reprojection c = cpu::reproject_leave_one_out(views, g);
        const Reprojection d = cuda::reproject_leave_one_out(views, g, 0);
        CHECK(c.filtered == d.filtered);
        CHECK(c.volume == d.volume);
        CHECK(c.projections == d.projections);
        // Asked for one output, each twin gives it alone, the same.
        for (const TomoOutputs keep : {TomoOutputs::volume, TomoOutputs::projections}) {
            const Reprojection ck = cpu::reproject_leave_one_out(views, g, keep);
            const Reprojection dk = cuda::reproject_leave_one_out(views, g, 0, keep);
            const bool volume = keep == TomoOutputs::volume;
            CHECK(ck.filtered.empty());
            CHECK(dk.filtered.empty());
            CHECK(ck.volume == (volume ? c.volume : std::vector<float>{}));
            CHECK(dk.volume == ck.volume);
            CHECK(ck.projections == (volume ? std::vector<float>{} : c.projections));
            CHECK(dk.projections == ck.projections);
        }
    }
}

// The defaults (the axis, the offset and the stretch "auto": stretched
// here) place this series 0.42 px from the truth gauge-free (0.48 with the
// axis and the offset given as 0); matching, which moves a slab's views
// along the axis only, leaves it 0.41 px off. What holds: the pairs within
// 0.45 px, and matching leaves them no worse.
TEST_CASE("projection matching's sine mode: the line c0 + c1 sin t through the moves; a view's rows' shift from their sums") {
    std::vector<double> angles, moves;
    std::mt19937 rng(3);
    std::normal_distribution<double> noise(0, 0.05);
    for (int k = -35; k <= 35; ++k) {
        angles.push_back(2.0 * k);
        moves.push_back(0.3 - 0.17 * std::sin(2.0 * k * M_PI / 180) + noise(rng));
    }
    const SineFit f = fit_sine(angles, moves);
    // 71 moves of noise 0.05 over sin t in +-0.94: c1's error about 0.05 / (0.64 * sqrt(71)) = 0.009.
    CHECK(f.c1_error == doctest::Approx(0.009).epsilon(0.3));
    CHECK(std::fabs(f.c1 + 0.17) < 3 * f.c1_error);
    CHECK(std::fabs(f.c0 - 0.3) < 0.02);
    CHECK_THROWS_AS(fit_sine({10, 10, 10}, {1, 2, 3}), std::invalid_argument);
    CHECK_THROWS_AS(fit_sine({1, 2}, {1, 2}), std::invalid_argument);


    // Row sums: a view whose content lies 0.37 rows lower than the
    // reference's, and moves across the axis by 5 columns besides.
    AxisGrid g;
    g.width = 96, g.rows = 64;
    auto blobs = [&](double dx, double dy) {
        std::vector<float> img(std::size_t(g.width) * g.rows);
        const double cx[] = {20, 45, 70, 33}, cy[] = {12, 25, 40, 50}, s2[] = {9, 16, 6, 12};
        for (int y = 0; y < g.rows; ++y)
            for (int x = 0; x < g.width; ++x) {
                double v = 0;
                for (int k = 0; k < 4; ++k)
                    v += std::exp(-((x - cx[k] - dx) * (x - cx[k] - dx) + (y - cy[k] - dy) * (y - cy[k] - dy)) / (2 * s2[k]));
                img[std::size_t(y) * g.width + x] = float(v);
            }
        return img;
    };
    const std::vector<float> reference = blobs(0, 0), view = blobs(5, 0.37), back = blobs(-3, -1.6);
    const GridRect all{0, 0, g.width, g.rows};
    CHECK(row_sum_shift(reference.data(), view.data(), g, all, 3) == doctest::Approx(0.37).epsilon(0.03));
    CHECK(row_sum_shift(reference.data(), back.data(), g, all, 3) == doctest::Approx(-1.6).epsilon(0.01));
    CHECK(row_sum_shift(reference.data(), reference.data(), g, all, 3) == doctest::Approx(0).scale(1).epsilon(1e-6));
}

TEST_CASE("projection matching: a tilt series projected from the real zebrafish volume, jittered, ends no worse than "
          "its pairs") {
    const std::string dir = temp_dir("projection_matching");
    const Simulated s = simulate(dir, 7);
    const StackResult pairs = run_job(dir, "projection_matching = false", BackendRequest::cpu);
    const StackResult matched = run_job(dir, "projection_matching = true", BackendRequest::cpu);
    const double before = rms_error(pairs, s), after = rms_error(matched, s);
    MESSAGE("RMS error from the jitter: pairs " << before << " px, with projection matching " << after << " px");
    CHECK(before < 0.45);
    CHECK(after < before + 0.01);
    // shifts.csv keeps the pairs' offsets beside the final ones.
    const std::string csv = read_text(dir + "/out/shifts.csv");
    CHECK(csv.rfind("frame,dx,dy,neighbour_dx,neighbour_dy,mi,sharpness,confidence,tilt,coarse_dx,coarse_dy,projection_residual,status\n", 0) == 0);
    const auto record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(record["projection_matching"]["rounds"].get<int>() >= 1);
    CHECK(record["config"]["alignment"]["projection_matching"] == "on");
    CHECK(matched.frames[20].coarse.dx == doctest::Approx(pairs.frames[20].offset.dx));
    // The report plots each round's largest and RMS move.
    run_job(dir, "projection_matching = true", BackendRequest::cpu, true);
    const std::string html = read_text(dir + "/out/report.html");
    CHECK(html.find("id=\"projection_rounds\"") != std::string::npos);
    CHECK(html.find("how far each round moved the views") != std::string::npos);

    if (skip_without_gpu()) return;
    const StackResult on_gpu = run_job(dir, "projection_matching = true", BackendRequest::cuda);
    const std::string gpu_csv = read_text(dir + "/out/shifts.csv");
    CHECK(gpu_csv == csv);
}

TEST_CASE("projection matching, projection_moves = \"sine\": the views move along the axis by one shared line in "
          "sin t, not across it; no worse than the pairs; CUDA gives the CPU's offsets") {
    const std::string dir = temp_dir("projection_matching_sine");
    const Simulated s = simulate(dir, 7);
    const std::string keys = "tilt_axis = 0\nprojection_matching = true\nprojection_moves = \"sine\"";
    const StackResult pairs = run_job(dir, "tilt_axis = 0\nprojection_matching = false", BackendRequest::cpu);
    const StackResult matched = run_job(dir, keys, BackendRequest::cpu);
    const double before = rms_error(pairs, s), after = rms_error(matched, s);
    MESSAGE("RMS error from the jitter: pairs " << before << " px, with the sine mode " << after << " px");
    CHECK(after < before + 0.01);
    // Every view's move since the pairs: 0 across, c sin t along, one c.
    std::vector<double> sines, moves;
    for (std::size_t k = 0; k < s.angles.size(); ++k) {
        CHECK(matched.frames[k].offset.dx == doctest::Approx(matched.frames[k].coarse.dx).epsilon(1e-12));
        sines.push_back(std::sin(s.angles[k] * M_PI / 180));
        moves.push_back(matched.frames[k].offset.dy - matched.frames[k].coarse.dy);
    }
    double ss = 0, sm = 0;
    for (std::size_t k = 0; k < sines.size(); ++k) ss += sines[k] * sines[k], sm += sines[k] * moves[k];
    const double c = sm / ss;
    for (std::size_t k = 0; k < sines.size(); ++k) CHECK(moves[k] == doctest::Approx(c * sines[k]).epsilon(1e-6));
    const auto record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    const auto& pm = record["projection_matching"];
    CHECK(pm["along_sine_applied_px"].size() == pm["rounds"].get<std::size_t>());
    double applied = 0;
    for (double step : pm["along_sine_applied_px"]) applied += step;
    CHECK(std::fabs(applied) == doctest::Approx(std::fabs(c)).epsilon(1e-6));
    const std::string csv = read_text(dir + "/out/shifts.csv");

    if (skip_without_gpu()) return;
    run_job(dir, keys, BackendRequest::cuda);
    CHECK(read_text(dir + "/out/shifts.csv") == csv);
}

TEST_CASE("projection matching: a signal during the rounds stops the job with no run.json; run again, it completes") {
    const std::string dir = temp_dir("projection_matching_interrupted");
    write_tiff_stack(dir + "/series.tif", [] {
        std::vector<RawFrame> v;
        for (int k = 0; k < 91; k += 6) v.push_back(sample_frame("sample_data/haadf_tilt_91x64x64.tif", k));
        return v;
    }());
    write_text(dir + "/job.toml", "[input]\nstack = \"" + dir + "/series.tif\"\nangles = {start = -90, step = 12}\n"
               "[search]\nwindow = [40, 40]\nmax_shift = 12\n[alignment]\nprojection_matching = true\n"
               "[output]\ndir = \"" + dir + "/out\"\n");
    RunOptions opt;
    opt.verbosity = Verbosity::quiet;
    opt.backend = BackendRequest::cpu;
    install_interrupt_handlers();
    set_progress_observer([](const std::string& what, int done, int) {
        if (what == "projection matching" && done == 3) std::raise(SIGINT);
    });
    CHECK_THROWS_AS(run_stack(load_config(dir + "/job.toml"), opt), Interrupted);
    set_progress_observer(nullptr);
    clear_interrupt();
    CHECK_FALSE(std::filesystem::exists(dir + "/out/run.json"));
    CHECK_FALSE(std::filesystem::exists(dir + "/out/shifts.csv"));
    run_stack(load_config(dir + "/job.toml"), opt);
    CHECK(std::filesystem::exists(dir + "/out/run.json"));
    CHECK(read_text(dir + "/out/shifts.csv").find("coarse_dx") != std::string::npos);
}

TEST_CASE("projection matching: refused without angles or with bitmap projections, naming the key") {
    const std::string dir = temp_dir("projection_matching_refused");
    write_tiff_stack(dir + "/s.tif", {sample_frame("sample_data/haadf_tilt_91x64x64.tif", 0),
                                      sample_frame("sample_data/haadf_tilt_91x64x64.tif", 1)});
    write_text(dir + "/a.toml", "[input]\nstack = \"" + dir + "/s.tif\"\n[search]\nmax_shift = 4\n"
               "[alignment]\nprojection_matching = true\n[output]\ndir = \"" + dir + "/out\"\n");
    RunOptions opt;
    opt.verbosity = Verbosity::quiet;
    opt.backend = BackendRequest::cpu;
    CHECK_THROWS_WITH_AS(run_stack(load_config(dir + "/a.toml"), opt),
                         doctest::Contains("a.toml:6: [alignment] projection_matching"), ConfigError);
    write_text(dir + "/b.toml", "[input]\nstack = \"" + dir + "/s.tif\"\nangles = {start = 0, step = 2}\n"
               "[alignment]\nprojection_binning = 0\n[output]\ndir = \"" + dir + "/out\"\n");
    CHECK_THROWS_AS(load_config(dir + "/b.toml"), ConfigError);
}
