// The tilt axis's place across a slab's views: the measure and its scan
// (src/alignment/axis_sharpness.hpp), and the stage end to end on a tilt
// series projected from the real zebrafish volume with every view moved
// alike, as a tilt axis off the detector's centre moves them.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "../pipelines/stack.hpp"
#include "../src/alignment/axis_sharpness.hpp"
#include "../src/config/config.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

TEST_CASE("axis place: the sharpest shift between scanned ones, and none at the scan's end") {
    std::vector<double> shifts, values;
    for (int k = -4; k <= 4; ++k) shifts.push_back(2.0 * k), values.push_back(10 - (2.0 * k - 1.3) * (2.0 * k - 1.3));
    const SharpestShift inside = sharpest_shift(shifts, values);
    CHECK(inside.found);
    CHECK(inside.shift == doctest::Approx(1.3));
    for (int k = 0; k < 9; ++k) values[k] = shifts[k];  // rising to the end
    CHECK_FALSE(sharpest_shift(shifts, values).found);
}

TEST_CASE("axis place: held views binned and read further across; outside the frame stays outside") {
    HeldGrid h{12, 4, 2, 2};  // 12 x 4 held pixels, 2 views, 2 x 2 into one
    std::vector<float> held(std::size_t(h.views) * h.rows * h.width);
    for (int v = 0; v < h.views; ++v)
        for (int y = 0; y < h.rows; ++y)
            for (int x = 0; x < h.width; ++x) held[(std::size_t(v) * h.rows + y) * h.width + x] = float(x + 100 * v);
    held[std::size_t(h.rows) * h.width + 7] = std::numeric_limits<float>::quiet_NaN();  // view 1, row 0, column 7
    std::vector<float> out;
    binned_across_shift(held, h, 2, 0, 0, 4, 2, out);
    CHECK(out[0] == doctest::Approx(2.5));  // columns 2 and 3
    CHECK(out[3] == doctest::Approx(8.5));
    binned_across_shift(held, h, 2, 0, 3, 4, 2, out);
    CHECK(out[0] == doctest::Approx(5.5));  // three held pixels further: columns 5 and 6
    CHECK(std::isnan(out[2 * 4 + 0 + 1]));  // view 1's pixel 1 holds column 7
    CHECK(std::isnan(out[3]));              // columns 11 and 12: past the frame
    std::vector<float> flat(64, 1.0f), peaked(64, 0.0f);
    peaked[20] = 1.0f;
    CHECK(sharpness(flat, 8, 2, 4) == doctest::Approx(1.0));
    CHECK(sharpness(peaked, 8, 2, 4) > 2.0);
}

namespace {

const char* kFish = "sample_data/fish1_pre_anatomy_41x83x166.tif";

// The constant of c + a cos t + b sin t fitted to the error across the axis:
// the tilt axis's place against the views' centre, px.
double axis_place_error(const StackResult& r, const std::vector<double>& angles, const std::vector<double>& truth) {
    Eigen::MatrixXd A(angles.size(), 3);
    Eigen::VectorXd e(angles.size());
    for (std::size_t k = 0; k < angles.size(); ++k) {
        const double t = angles[k] * M_PI / 180;
        A.row(k) << 1, std::cos(t), std::sin(t);
        e(k) = r.frames[k].offset.dx - truth[k];
    }
    return A.colPivHouseholderQr().solve(e)(0);
}

// The zebrafish volume's slices at `layer` (all of them: -1) in its box.
RawFrame fish_layer(int layer) {
    RawFrame v = sample_volume(kFish);
    if (layer < 0) return v;
    const std::size_t slice = v.bytes.size() / std::size_t(v.depth);
    for (int z = 0; z < v.depth; ++z)
        if (z != layer) std::fill_n(v.bytes.begin() + std::ptrdiff_t(z * slice), slice, 0);
    return v;
}

// `volume` projected over 41 views of ±60°, every view moved by `place` (an
// axis that far off the views' centre) and up to 2 px of jitter; run with
// `alignment` keys on a backend.
struct SlabSeries {
    std::string dir;
    std::vector<double> angles, jx;
    SlabSeries(const std::string& name, double place, const RawFrame& volume) : dir(temp_dir(name)) {
        std::mt19937 rng(11);
        std::uniform_real_distribution<double> ux(-2, 2);
        std::vector<RawFrame> views;
        std::string tlt;
        for (int k = 0; k < 41; ++k) {
            angles.push_back(-60 + 3 * k);
            jx.push_back(place + ux(rng));
            views.push_back(project_volume(volume, angles.back(), jx.back(), 0.0));
            tlt += std::to_string(angles.back()) + "\n";
        }
        write_tiff_stack(dir + "/series.tif", views);
        write_text(dir + "/series.tlt", tlt);
    }
    StackResult run(const std::string& alignment, BackendRequest backend) const {
        write_text(dir + "/job.toml", "[input]\nstack = \"" + dir + "/series.tif\"\nangles = \"" + dir +
                                          "/series.tlt\"\n[search]\nmax_shift = 8\n[alignment]\ntilt_axis = 0\n" +
                                          alignment + "\n[output]\ndir = \"" + dir + "/out\"\naligned = false\nreport = false\n");
        RunOptions quiet;
        quiet.verbosity = Verbosity::quiet;
        quiet.backend = backend;
        return run_stack(load_config(dir + "/job.toml"), quiet);
    }
    nlohmann::json record() const { return nlohmann::json::parse(read_text(dir + "/out/run.json")); }
};

}  // namespace

TEST_CASE("axis place: a slab's views all moved 4 px, as an axis off the centre moves them, are placed back") {
    const SlabSeries series("axis_place", 4.0, fish_layer(-1));
    const StackResult left = series.run("axis_place = false", BackendRequest::cpu);
    CHECK(series.record().count("axis_place") == 0);
    const StackResult placed = series.run("", BackendRequest::cpu);
    const auto record = series.record();
    REQUIRE(record["axis_place"]["moved"] == true);
    const double before = axis_place_error(left, series.angles, series.jx),
                 after = axis_place_error(placed, series.angles, series.jx);
    MESSAGE("the axis's place against the truth: " << before << " px from the pairs, " << after << " px placed");
    CHECK(std::fabs(before) > 3.0);
    CHECK(std::fabs(after) < 1.0);
    // Every view moved by the one shift run.json states.
    const double moved = record["axis_place"]["shift_px"].get<double>();
    CHECK(std::fabs(after - before) == doctest::Approx(std::fabs(moved)).epsilon(0.05));
    const std::string csv = read_text(series.dir + "/out/shifts.csv");

    if (skip_without_gpu()) return;
    series.run("", BackendRequest::cuda);
    CHECK(read_text(series.dir + "/out/shifts.csv") == csv);
}

TEST_CASE("axis place: one flat layer, whose pairs place the axis, is not moved by the measure's own bias") {
    const SlabSeries series("axis_place_near", 4.0, fish_layer(30));
    const StackResult left = series.run("axis_place = false", BackendRequest::cpu);
    const std::string csv = read_text(series.dir + "/out/shifts.csv");
    series.run("", BackendRequest::cpu);
    const auto record = series.record()["axis_place"];
    const double pairs = axis_place_error(left, series.angles, series.jx);
    MESSAGE("the axis's place from the pairs " << pairs << " px off; the sharpest "
                                               << record["shift_px"].get<double>() << " px from it");
    CHECK(std::fabs(pairs) < 0.5);
    REQUIRE(record["ran"] == true);
    CHECK(record["moved"] == false);
    CHECK(std::fabs(record["shift_px"].get<double>()) < 1.5);
    CHECK(record["why_not"].get<std::string>().find("within the measure's own bias") != std::string::npos);
    CHECK(read_text(series.dir + "/out/shifts.csv") == csv);
}
