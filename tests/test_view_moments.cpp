// Centres of mass of a tilt series' views (src/alignment/view_moments,
// pipelines/stages/centre_of_mass): the arithmetic on made-up views, and a
// whole object's series projected from the real zebrafish volume, jittered
// by known sub-pixel offsets, placed by its moments.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "../pipelines/stack.hpp"
#include "../src/alignment/tilt_geometry.hpp"
#include "../src/alignment/view_moments.hpp"
#include "../src/config/config.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

// A view of `width` x `rows` on a background of 10 with a Gaussian blob of
// mass ~ `mass` at (u, w) from the centre.
std::vector<float> blob(int width, int rows, double u, double w, double mass = 1000) {
    std::vector<float> v(std::size_t(width) * rows);
    const double s = 3, cu = (width - 1) / 2.0 + u, cw = (rows - 1) / 2.0 + w;
    for (int j = 0; j < rows; ++j)
        for (int i = 0; i < width; ++i)
            v[std::size_t(j) * width + i] =
                float(10 + mass / (2 * M_PI * s * s) * std::exp(-((i - cu) * (i - cu) + (j - cw) * (j - cw)) / (2 * s * s)));
    return v;
}

// Gauge-free RMS of offsets against the truth (c + a cos t + b sin t across
// the axis, a constant along it, removed), as bench/tilt_sim.py scores.
double gauge_free(const std::vector<FrameResult>& frames, const std::vector<double>& jx, const std::vector<double>& jy,
                  const std::vector<double>& angles) {
    std::vector<double> across(frames.size()), along(frames.size());
    for (std::size_t k = 0; k < frames.size(); ++k)
        across[k] = frames[k].offset.dx - jx[k], along[k] = frames[k].offset.dy - jy[k];
    return gauge_free_rms(across, along, angles);
}

// Where the offsets put the tilt axis across the views, relative to where
// the projector turned the object (the views' centre): the c of the fit of
// c + a cos t + b sin t to the errors across the axis.
double axis_place(const std::vector<FrameResult>& frames, const std::vector<double>& jx,
                  const std::vector<double>& angles) {
    std::vector<double> across(frames.size());
    for (std::size_t k = 0; k < frames.size(); ++k) across[k] = frames[k].offset.dx - jx[k];
    return object_place_fit(across, angles)[0];
}

}  // namespace

TEST_CASE("view moments: a blob's centre and mass on a flat background, NaN samples left out") {
    std::vector<float> v = blob(64, 48, 5.25, -3.5);
    v[0] = v[1] = NAN;  // outside the frame
    const std::vector<char> all(48, 1);
    const ViewMoments m = moments_over_rows(row_moments(v.data(), 64, 48), all);
    CHECK(m.mass == doctest::Approx(1000).epsilon(0.01));
    CHECK(m.across == doctest::Approx(5.25).epsilon(1e-3));
    CHECK(m.along == doctest::Approx(-3.5).epsilon(1e-3));
    CHECK(m.left_out == 0);
    // A dark object on a bright background (bright field) has a centre too.
    for (float& p : v) p = std::isnan(p) ? p : 2000 - p;
    CHECK(moments_over_rows(row_moments(v.data(), 64, 48), all).across == doctest::Approx(5.25).epsilon(1e-3));
}

TEST_CASE("view moments: misplacements are what the object's translation (a cos t + b sin t of the fit by c + a cos "
          "t + b sin t) and a constant along leave: the tilt axis's place c stays") {
    const double c = 1.5, a = -2, b = 0.75, along = 4;
    std::vector<ViewMoments> views;
    std::vector<double> angles, ex, ey;
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> e(-0.5, 0.5);
    for (int k = 0; k < 31; ++k) {
        angles.push_back(-90 + 6 * k);
        const double t = angles.back() * M_PI / 180;
        ex.push_back(e(rng)), ey.push_back(e(rng));
        ViewMoments m;
        m.across = c + a * std::cos(t) + b * std::sin(t) + ex.back();
        m.along = along + ey.back();
        views.push_back(m);
    }
    // The errors themselves, less their own object's translation, and c:
    // what the fit returns.
    const std::vector<Shift> found = moment_misplacements(views, angles);
    std::vector<ViewMoments> errors(views.size());
    for (std::size_t k = 0; k < views.size(); ++k) errors[k].across = ex[k], errors[k].along = ey[k];
    const std::vector<Shift> expected = moment_misplacements(errors, angles);
    for (std::size_t k = 0; k < views.size(); ++k) {
        CHECK(found[k].dx == doctest::Approx(expected[k].dx + c).epsilon(1e-9));
        CHECK(found[k].dy == doctest::Approx(expected[k].dy).epsilon(1e-9));
    }
}

TEST_CASE("view moments: views the moments cannot place are named, with why") {
    std::vector<ViewMoments> views(6);
    for (ViewMoments& m : views) m.mass = 100;
    const std::vector<int> frames = {0, 2, 3, 4, 5, 7};
    CHECK(moments_unusable(views, frames, 0.5, 0.03) == "");
    views[3].mass = 110;
    CHECK(moments_unusable(views, frames, 0.5, 0.03) ==
          "view 4's mass differs from the median by 10.0 % (the object is not the same in every view)");
    views[3].mass = 100;
    views[5].left_out = 0.6;
    CHECK(moments_unusable(views, frames, 0.5, 0.03) ==
          "60.0 % of view 7's mass lies in slices that some view does not show whole (the object leaves the view)");
}

TEST_CASE("view moments by rows: a slice that crosses a view's side is left out of every view, and what is left "
          "places the views") {
    // Two blobs in different rows; in the second view the lower one sits at
    // the view's side, so its rows are no whole slice there.
    const int width = 64, rows = 80;
    std::vector<float> a = blob(width, rows, 5, -16), b = blob(width, rows, -2, 16);
    std::vector<float> first(a.size()), second(a.size());
    const std::vector<float> side = blob(width, rows, 26, 16);
    for (std::size_t i = 0; i < a.size(); ++i) first[i] = a[i] + b[i] - 10, second[i] = a[i] + side[i] - 10;
    const std::vector<RowMoments> views = {row_moments(first.data(), width, rows), row_moments(second.data(), width, rows)};
    const std::vector<char> whole = rows_whole_in_every_view(views, 0.01);
    CHECK(whole[std::size_t(rows / 2 - 16)] == 1);
    CHECK(whole[std::size_t(rows / 2 + 16)] == 0);
    for (const RowMoments& v : views) {
        const ViewMoments m = moments_over_rows(v, whole);
        // The rows too faint to count (under a hundredth of an average
        // row's mass) stay in, with the other blob's far tails: 0.01 px.
        CHECK(std::fabs(m.across - 5) < 0.02);
        CHECK(std::fabs(m.along + 16) < 0.03);
        CHECK(m.left_out == doctest::Approx(0.5).epsilon(0.01));
    }
}

TEST_CASE("view moments by rows: each view's shift along the axis by its slices' masses, where the object runs past "
          "the views' ends") {
    // A profile along the axis that fills the view's rows, each view moved
    // by a known sub-pixel amount (the content beyond the ends lost).
    const int width = 32, rows = 64;
    const std::vector<double> moved = {0.3, -0.2, 0.05, -0.4, 0.25};
    std::vector<RowMoments> views;
    for (double e : moved) {
        std::vector<float> v(std::size_t(width) * rows, 10.0f);
        for (int j = 0; j < rows; ++j) {
            const double y = j - e;
            const double mass = 50 + 30 * std::sin(y / 5.0) + 20 * std::cos(y / 3.0);
            for (int i = 12; i < 20; ++i) v[std::size_t(j) * width + i] += float(mass / 8);
        }
        views.push_back(row_moments(v.data(), width, rows));
    }
    const std::vector<char> all(rows, 1);
    const std::vector<double> found = along_by_row_masses(views, all);
    double mean = 0;
    for (double e : moved) mean += e / double(moved.size());
    for (std::size_t k = 0; k < moved.size(); ++k) CHECK(found[k] == doctest::Approx(moved[k] - mean).epsilon(0.02));
}

// Blobs of a made-up object projected at 37 tilts over +-72 degrees, each
// view sampled on a grid turned by `turn` degrees from the true axis and
// moved along it by its own amount: the turn that makes their slice
// masses agree is -turn, whatever the views' shifts along.
TEST_CASE("view moments: the tilt axis's turn from the slice masses") {
    struct Blob {
        double x, y, z, mass;
    };
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> in(-20, 20), along(-40, 40), mass(1, 3);
    std::vector<Blob> blobs;
    for (int b = 0; b < 40; ++b) blobs.push_back({in(rng), along(rng), in(rng), mass(rng)});
    const int width = 96, rows = 128;
    auto view = [&](double tilt, double turn_deg, double shift) {
        const double t = tilt * M_PI / 180, g = turn_deg * M_PI / 180;
        std::vector<float> v(std::size_t(width) * rows, 0.0f);
        for (int j = 0; j < rows; ++j)
            for (int i = 0; i < width; ++i) {
                const double u = i - (width - 1) / 2.0, w = j - (rows - 1) / 2.0;
                const double x0 = u * std::cos(g) - w * std::sin(g), y0 = u * std::sin(g) + w * std::cos(g) + shift;
                double sum = 0;
                for (const Blob& b : blobs) {
                    const double dx = x0 - (b.x * std::cos(t) + b.z * std::sin(t)), dy = y0 - b.y;
                    sum += b.mass * std::exp(-(dx * dx + dy * dy) / (2 * 2.5 * 2.5));
                }
                v[std::size_t(j) * width + i] = float(sum);
            }
        return row_moments(v.data(), width, rows);
    };
    for (double turn : {0.4, -0.15}) {
        std::vector<RowMoments> at, plus, minus;
        std::uniform_real_distribution<double> shift(-0.5, 0.5);
        for (int k = 0; k < 37; ++k) {
            const double tilt = -72 + 4 * k, s = shift(rng);
            at.push_back(view(tilt, turn, s)), plus.push_back(view(tilt, turn + 0.25, s)),
                minus.push_back(view(tilt, turn - 0.25, s));
        }
        std::vector<RowMoments> all = at;
        all.insert(all.end(), plus.begin(), plus.end());
        all.insert(all.end(), minus.begin(), minus.end());
        const AxisTurn found = axis_turn_by_row_masses(at, plus, minus, 0.25, rows_whole_in_every_view(all, 0.01));
        CAPTURE(turn);
        CAPTURE(found.standard_error);
        REQUIRE(found.usable());
        // One linearised step: within a tenth of the turn, and a few
        // thousandths of a degree where it starts near.
        CHECK(found.degrees == doctest::Approx(-turn).epsilon(0.1));
        CHECK(found.standard_error < 0.05);
    }
}

// The stage logs and writes why the axis was not turned, so each refusal
// names its own reason.
TEST_CASE("view moments: a turn the slice masses cannot judge says why") {
    const int width = 8, rows = 16;
    auto flat_view = [&](double level) {
        std::vector<float> v(std::size_t(width) * rows, float(level));
        return row_moments(v.data(), width, rows);
    };
    const std::vector<char> all(rows, 1);
    std::vector<RowMoments> few(5, flat_view(1.0));
    const AxisTurn too_few = axis_turn_by_row_masses(few, few, few, 0.25, all);
    CHECK_FALSE(too_few.usable());
    CHECK(too_few.why_not.find("fewer than 10 views") != std::string::npos);
    std::vector<RowMoments> flat;
    for (int k = 0; k < 12; ++k) flat.push_back(flat_view(1.0 + 0.1 * k));
    const AxisTurn no_slope = axis_turn_by_row_masses(flat, flat, flat, 0.25, all);
    CHECK_FALSE(no_slope.usable());
    CHECK(no_slope.why_not.find("do not change along the axis") != std::string::npos);
    CHECK_THROWS_AS(axis_turn_by_row_masses(flat, few, flat, 0.25, all), std::logic_error);
}

// A whole object's series over +-`range` degrees (61 views) projected from the
// real zebrafish volume, less its background, with `pad` empty rows above
// and below, on a detector `detector` px wide, each view moved by a known
// jitter of up to (jitter_x, jitter_y) px; written as series.tif and
// series.tlt in `dir`.
struct JitteredSeries {
    std::vector<double> angles, jx, jy;
};
JitteredSeries whole_object_series(const std::string& dir, int pad, int detector, double jitter_x, double jitter_y,
                                   double range = 90) {
    // The brain less its background (the 5th percentile, as bench/tilt_sim.py):
    // with it, a constant block of 166 x 41, the test projector's point
    // sampling of the block's hard faces is measured too (0.065 px, not 0.034).
    RawFrame volume = sample_volume("sample_data/fish1_pre_anatomy_41x83x166.tif");
    {
        ImageF v = volume.to_float();
        std::vector<float> sorted(v.pixels.begin(), v.pixels.end());
        std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 20, sorted.end());
        const float background = sorted[sorted.size() / 20];
        volume.type = PixelType::f32;
        volume.height = v.height + 2 * pad;
        volume.bytes.assign(std::size_t(v.width) * volume.height * v.depth * 4, 0);
        float* out = reinterpret_cast<float*>(volume.bytes.data());
        for (int z = 0; z < v.depth; ++z)
            for (int y = 0; y < v.height; ++y)
                for (int x = 0; x < v.width; ++x)
                    out[(std::size_t(z) * volume.height + y + pad) * v.width + x] =
                        std::max(0.0f, v.at(x, y, z) - background);
    }
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> ux(-jitter_x, jitter_x), uy(-jitter_y, jitter_y);
    JitteredSeries s;
    std::vector<RawFrame> views;
    std::string tlt;
    for (int k = 0; k < 61; ++k) {
        s.angles.push_back(-range + range / 30 * k);
        s.jx.push_back(ux(rng)), s.jy.push_back(uy(rng));
        views.push_back(project_volume(volume, s.angles.back(), s.jx.back(), s.jy.back(), detector));
        tlt += std::to_string(s.angles.back()) + "\n";
    }
    write_tiff_stack(dir + "/series.tif", views);
    write_text(dir + "/series.tlt", tlt);
    return s;
}

StackResult run_whole_object(const std::string& dir, const std::string& alignment) {
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    quiet.backend = BackendRequest::cpu;
    write_text(dir + "/job.toml", "[input]\nstack = \"series.tif\"\nangles = \"series.tlt\"\n[search]\nmax_shift = 8\n"
                                  "[alignment]\n" + alignment + "\n[output]\ndir = \"out\"\naligned = false\nreport = false\n");
    return run_stack(load_config(dir + "/job.toml"), quiet);
}

// A whole object inside every view over +-90 degrees: the pairs leave
// their own error, and the tilt axis where their reference view put it;
// the moments place the views to within the projector's, the axis at the
// views' centre, where the projector turned the object.
TEST_CASE("centres of mass: a whole object's series projected from the real zebrafish volume, jittered, is placed "
          "within 0.05 px gauge-free and its tilt axis within 0.05 px of the views' centre; projection matching "
          "that makes it worse is not kept") {
    const std::string dir = temp_dir("centre_of_mass");
    // 8 empty rows above and below: the jitter along the axis moves the
    // content within the views, never out of them.
    const JitteredSeries series = whole_object_series(dir, 8, 200, 3, 2);
    const std::vector<double>&angles = series.angles, &jx = series.jx, &jy = series.jy;
    auto run = [&](const std::string& alignment) { return run_whole_object(dir, alignment); };
    const StackResult pairs = run("center_of_mass = false");
    const StackResult centred = run("");
    const double before = gauge_free(pairs.frames, jx, jy, angles), after = gauge_free(centred.frames, jx, jy, angles);
    MESSAGE("gauge-free RMS from the jitter: pairs " << before << " px, centres of mass " << after << " px");
    CHECK(after < 0.05);
    CHECK(after < 0.5 * before);
    const nlohmann::json record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(record["centre_of_mass"]["applied"] == true);
    const double axis_before = axis_place(pairs.frames, jx, angles), axis_after = axis_place(centred.frames, jx, angles);
    MESSAGE("the tilt axis off the views' centre: pairs " << axis_before << " px, centres of mass " << axis_after
                                                          << " px (run.json: "
                                                          << record["centre_of_mass"]["tilt_axis_off_px"] << ")");
    CHECK(std::fabs(axis_after) < 0.05);
    // run.json says where the axis lay in the views as the pairs aligned
    // them: an offset too large by c leaves the content c short of its place.
    CHECK(double(record["centre_of_mass"]["tilt_axis_off_px"]) == doctest::Approx(axis_after - axis_before).epsilon(0.05));

    const StackResult matched = run("projection_matching = true");
    const nlohmann::json with_matching = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    const bool kept = with_matching["projection_matching"]["kept"];
    CAPTURE(with_matching["projection_matching"]["kept_why"].get<std::string>());
    if (!kept)
        for (std::size_t k = 0; k < matched.frames.size(); ++k) CHECK(matched.frames[k].offset.dx == centred.frames[k].offset.dx);
    CHECK(gauge_free(matched.frames, jx, jy, angles) < 0.05);
}

// The same object with no empty rows: its ends run past the views' ends
// along the axis, so the moments of whole views would be refused (or
// biased). The slices every view shows whole place the views across the
// axis, and their masses along it.
TEST_CASE("centres of mass: a whole object that runs past its views' ends is placed by the slices every view shows "
          "whole, within 0.05 px gauge-free") {
    const std::string dir = temp_dir("centre_of_mass_leaving");
    const JitteredSeries s = whole_object_series(dir, 0, 200, 4, 3);
    const StackResult pairs = run_whole_object(dir, "center_of_mass = false");
    const StackResult centred = run_whole_object(dir, "");
    const double before = gauge_free(pairs.frames, s.jx, s.jy, s.angles);
    const double after = gauge_free(centred.frames, s.jx, s.jy, s.angles);
    MESSAGE("gauge-free RMS from the jitter: pairs " << before << " px, centres of mass " << after << " px");
    const nlohmann::json record = nlohmann::json::parse(read_text(dir + "/out/run.json"))["centre_of_mass"];
    CAPTURE(record.dump());
    REQUIRE(record["applied"] == true);
    CHECK(int(record["rows_used"]) < int(record["rows"]));
    CHECK(record["along_applied"] == false);
    CHECK(after < 0.05);
    CHECK(after < 0.5 * before);
    // The axis, found by the tracks, then turned until the slice masses
    // agree: the projector's, 0.
    CHECK(record["axis_refined"] == true);
    CHECK(std::fabs(double(record["axis"])) < 0.05);
}

// A whole object seen over +-60 degrees only: its views pass the checks as
// they do over +-90, and "auto" uses them whatever the range.
TEST_CASE("centres of mass: \"auto\" places a whole object seen over +-60 degrees by its moments too") {
    const std::string dir = temp_dir("centre_of_mass_60");
    const JitteredSeries s = whole_object_series(dir, 8, 200, 3, 2, 60);
    const StackResult centred = run_whole_object(dir, "");
    const double after = gauge_free(centred.frames, s.jx, s.jy, s.angles);
    MESSAGE("gauge-free RMS from the jitter: " << after << " px");
    const nlohmann::json record = nlohmann::json::parse(read_text(dir + "/out/run.json"))["centre_of_mass"];
    CAPTURE(record.dump());
    CHECK(record["applied"] == true);
    CHECK(after < 0.05);
    CHECK(record["axis_refined"] == true);
    CHECK(std::fabs(double(record["axis"])) < 0.05);
}

// The sample needle crosses the sides of its views: the moments would say
// nothing true of it, and "auto" says so instead of using them.
TEST_CASE("centres of mass: \"auto\" leaves the sample needle, which leaves its views, to the pairs, and says why") {
    const std::string dir = temp_dir("centre_of_mass_needle");
    std::string cfg = sample_config("sample_tilt_series", dir + "/out");
    cfg.replace(cfg.find("report = true"), 13, "report = false");
    write_text(dir + "/job.toml", cfg);
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    quiet.backend = BackendRequest::cpu;
    run_stack(load_config(dir + "/job.toml"), quiet);
    const nlohmann::json record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(record["centre_of_mass"]["applied"] == false);
    const std::string why = record["centre_of_mass"]["chosen_by"];
    CAPTURE(why);
    CHECK(why.find("not used: ") != std::string::npos);
    CHECK(why.find("leaves the view") != std::string::npos);
}
