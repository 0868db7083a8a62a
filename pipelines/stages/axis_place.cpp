#include "axis_place.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../../kernels/axis_grid/axis_grid.hpp"
#include "../../kernels/tomo/tomo.hpp"
#include "../../src/alignment/axis_sharpness.hpp"
#include "../../src/alignment/projection_views.hpp"
#include "../run_options.hpp"
#include "grid_views.hpp"
#include "view_chunks.hpp"

namespace stackalign {
namespace {

// The reconstructions' views: at most this many pixels across the axis, the
// scale the measure was tried at (256-px views binned 2).
constexpr int kPlaceWidth = 128;
// Held at most this many times finer across than those pixels, so that a
// move is a whole number of held pixels: a bilinear sample would blur each
// view by how far it falls between pixels, and a blur lowers the measure.
constexpr int kHeldFiner = 4;
// The scan: every binned pixel over this many either side of the offsets'
// place, then every held pixel within one binned pixel of the sharpest.
constexpr int kReach = 6;
// Then the same at twice the resolution over this many binned pixels either
// side: at 512 px, binned 4 alone moved the zebrafish slab's axis from 2.2
// px off to 3.2 and the slab from 0.088 to 0.104 px; binned 2 took it to
// 0.083 (H100, CUDA, `python3 bench/tilt_accuracy.py --size 512 --noise
// 1000 --variants defaults --cases slab`), but alone at 256 px (binned 1,
// six pixels either side) it could not reach two layers' 6.5 px.
constexpr int kNearWidth = 2 * kPlaceWidth, kNearReach = 2;
// The middle share of the rows along the axis (the object's ends along the
// axis are not a slab's).
constexpr double kRows = 0.7;
// A sharpest place nearer the offsets' than this (frame px) moves nothing:
// the measure's own bias on views at their true offsets reaches 0.4-1.9 px
// on the bench's slabs over ±70° (`python3 bench/axis_place_bias.py
// --views 71 --range 70 --depth 64 --cases ...`), and moves within it cost
// one layer 0.015 -> 0.053 px and three layers 0.048 -> 0.082, where the
// pairs leave the axis 2-7 px off on the slabs it helps (`python3
// bench/tilt_accuracy.py --views 71 --range 70 --noise 1000 --variants
// defaults 'noplace=axis_place = false;tilt_axis = "auto"'`).
constexpr double kLeastMove = 1.5;

// One scan at views binned to at most `place_width` across: every binned
// pixel over `reach` either side, then every held pixel within one binned
// pixel of the sharpest. The move found (frame px), or none.
struct Scan {
    bool found = false, too_small = false;
    double shift_px = 0;
    int binning = 0, thickness = 0;
    std::vector<double> shifts_px, sharpness;
};
Scan scan_axis_place(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                     const std::vector<int>& order, int place_width, int reach) {
    Scan out;
    const int bin = binning_to_width(plan, place_width);
    const int fine = std::min(bin, kHeldFiner), held_bin = std::max(1, (bin + fine - 1) / fine);
    const AxisGrid held_grid = axis_grid(plan.width, plan.height, plan.tilt_axis, held_bin);
    HeldGrid h{held_grid.width, held_grid.rows, plan.frames, fine};
    const int margin = (reach + 2) * fine;
    const int width = (h.width - 2 * margin) / fine, rows = int(kRows * h.rows) / fine;
    if (width < 32 || rows < 2) {
        out.too_small = true;
        return out;
    }
    out.binning = held_bin * fine;
    std::vector<float> held(std::size_t(h.views) * h.rows * h.width, 0.0f);
    for_each_view_read(frames, order, [&](std::size_t k, const RawFrame& frame) {
        sample_on_axis_grid(frame, results[order[k]].offset, held_grid,
                            held.data() + std::size_t(order[k]) * h.rows * h.width, plan.device);
    });
    // The binned grid's columns start `first` held pixels in; its centre then
    // lies `half` held pixels short of the held grid's (the axis), so a read
    // `s` further is the views moved by s - half.
    const int first = (h.width - width * fine) / 2, row0 = (h.rows - rows * fine) / 2;
    const double half = 0.5 * (h.width - width * fine) - first;
    AxisGrid binned = axis_grid(plan.width, plan.height, plan.tilt_axis, out.binning);
    binned.width = width, binned.rows = rows;
    const std::vector<bool> used = frames_in(plan.frames, order);
    std::vector<float> views;
    auto measure = [&](int s, int thickness) {
        binned_across_shift(held, h, first, row0, s, width, rows, views);
#pragma omp parallel for schedule(static)
        for (int v = 0; v < plan.frames; ++v) level_axis_view(binned, views.data() + std::size_t(v) * width * rows);
        const TomoGeometry g = tomo_geometry(width, rows, thickness, plan.angles, used);
        return reproject_leave_one_out(views, g, plan.device, TomoOutputs::volume).volume;
    };
    // The depth that holds the specimen, from one reconstruction as deep as
    // the views are wide; the measure over it alone (the streaks beyond
    // carry the missing wedge, not the content).
    out.thickness = specimen_thickness(measure(0, width), tomo_geometry(width, rows, width, plan.angles, used));
    std::vector<double> coarse;
    for (int k = -reach; k <= reach; ++k) {
        coarse.push_back(sharpness(measure(k * fine, out.thickness), width, out.thickness, rows));
        out.shifts_px.push_back((k * fine - half) * held_bin), out.sharpness.push_back(coarse.back());
    }
    const int best = int(std::max_element(coarse.begin(), coarse.end()) - coarse.begin());
    if (best == 0 || best == 2 * reach) return out;
    std::vector<double> shifts, values;
    for (int s = (best - reach - 1) * fine; s <= (best - reach + 1) * fine; ++s) {
        shifts.push_back(double(s));
        values.push_back(s % fine == 0 ? coarse[std::size_t(s / fine + reach)]
                                       : sharpness(measure(s, out.thickness), width, out.thickness, rows));
    }
    const SharpestShift found = sharpest_shift(shifts, values);
    out.found = found.found;
    out.shift_px = (found.shift - half) * held_bin;
    return out;
}

// Every view's offset moved across the axis by `shift_px` frame px.
void move_across(const StackPlan& plan, std::vector<FrameResult>& results, double shift_px) {
    const AxisGrid frame_grid = axis_grid(plan.width, plan.height, plan.tilt_axis, 1);
    const Transform move = Transform::translation(frame_shift(frame_grid, shift_px, 0.0));
    for (FrameResult& f : results) f.offset = move.then(f.offset);
}

}  // namespace

AxisPlace place_axis_by_sharpness(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                  std::vector<FrameResult>& results, bool placed_whole, Verbosity verbosity) {
    AxisPlace out;
    if (!plan.axis_place) return out;
    if (placed_whole) {
        out.why = "a whole object: its centres of mass placed the axis";
        return out;
    }
    const auto start = Clock::now();
    const std::vector<int> order = usable_views(plan, search);
    if (order.size() < 8) {
        out.why = "too few views";
        log_line(verbosity, "axis place: not sought: " + out.why);
        return out;
    }
    // Coarse, far; then at twice the resolution, near.
    const Scan far = scan_axis_place(plan, frames, results, order, kPlaceWidth, kReach);
    if (far.too_small) {
        out.why = "views too small for it";
        log_line(verbosity, "axis place: not sought: " + out.why);
        return out;
    }
    out.ran = true;
    out.binning = far.binning, out.thickness = far.thickness;
    out.shifts_px = far.shifts_px, out.sharpness = far.sharpness;
    char line[300];
    auto not_moved = [&](const std::string& why) {
        out.why = why;
        out.seconds = seconds_since(start);
        std::snprintf(line, sizeof line, "axis place: not moved: %s (%.2f s)", out.why.c_str(), out.seconds);
        log_line(verbosity, line);
        return out;
    };
    if (!far.found) return not_moved("the sharpest reconstruction lies at the scan's end");
    const std::vector<FrameResult> before = results;
    move_across(plan, results, far.shift_px);
    out.shift_px = far.shift_px;
    const Scan near = scan_axis_place(plan, frames, results, order, kNearWidth, kNearReach);
    if (near.found) {
        move_across(plan, results, near.shift_px);
        out.shift_px += near.shift_px;
        out.near_binning = near.binning;
        out.near_shift_px = near.shift_px;
    }
    if (std::fabs(out.shift_px) < kLeastMove) {
        results = before;
        std::snprintf(line, sizeof line, "the sharpest lies %+.2f px from the offsets' place, within the measure's own bias",
                      out.shift_px);
        return not_moved(line);
    }
    out.seconds = seconds_since(start);
    out.moved = true;
    std::snprintf(line, sizeof line,
                  "axis place: every view moved %+.2f px across the axis, where the reconstruction is sharpest "
                  "(views binned %d, then %d; %d px deep) (%.2f s)",
                  out.shift_px, out.binning, near.found ? near.binning : out.binning, out.thickness * out.binning,
                  out.seconds);
    log_line(verbosity, line);
    return out;
}

nlohmann::ordered_json axis_place_record(const AxisPlace& a) {
    nlohmann::ordered_json j = {{"ran", a.ran}};
    if (!a.why.empty()) j["why_not"] = a.why;
    if (!a.ran) return j;
    j["moved"] = a.moved;
    j["shift_px"] = a.shift_px;
    j["binning"] = a.binning;
    j["near_binning"] = a.near_binning;
    j["near_shift_px"] = a.near_shift_px;
    j["thickness_px"] = a.thickness * a.binning;
    j["shifts_px"] = a.shifts_px;
    j["sharpness"] = a.sharpness;
    j["seconds"] = a.seconds;
    return j;
}

}  // namespace stackalign
