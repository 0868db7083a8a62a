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
// The middle share of the rows along the axis (the object's ends along the
// axis are not a slab's).
constexpr double kRows = 0.7;

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
    const int bin = binning_to_width(plan, kPlaceWidth);
    const int fine = std::min(bin, kHeldFiner), held_bin = std::max(1, (bin + fine - 1) / fine);
    const AxisGrid held_grid = axis_grid(plan.width, plan.height, plan.tilt_axis, held_bin);
    HeldGrid h{held_grid.width, held_grid.rows, plan.frames, fine};
    const int margin = (kReach + 2) * fine;
    const int width = (h.width - 2 * margin) / fine, rows = int(kRows * h.rows) / fine;
    if (width < 32 || rows < 2) {
        out.why = "views too small for it";
        log_line(verbosity, "axis place: not sought: " + out.why);
        return out;
    }
    out.binning = held_bin * fine, out.width = width, out.rows = rows;
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
    const AxisGrid grid = axis_grid(plan.width, plan.height, plan.tilt_axis, out.binning);
    AxisGrid binned = grid;
    binned.width = width, binned.rows = rows;
    const std::vector<bool> used = frames_in(plan.frames, order);
    // The angles as the pairs stretched them ("auto"'s offset added): the
    // angles read instead left the +-70-degree zebrafish slab's axis 0.79 px
    // off, not 0.20, and the slab at 0.092 px, not 0.073 (`python3
    // bench/tilt_accuracy.py --views 71 --range 70 --noise 1000 --cases slab
    // --variants defaults --no-reference`; +-60 degrees: 0.048 against 0.050).
    const std::vector<double>& angles = plan.angles;
    std::vector<float> views;
    auto measure = [&](int s, int thickness) {
        binned_across_shift(held, h, first, row0, s, width, rows, views);
#pragma omp parallel for schedule(static)
        for (int v = 0; v < plan.frames; ++v) {
            level_axis_view(binned, views.data() + std::size_t(v) * width * rows);
        }
        const TomoGeometry g = tomo_geometry(width, rows, thickness, angles, used);
        return reproject_leave_one_out(views, g, plan.device, TomoOutputs::volume).volume;
    };
    // The depth that holds the specimen, from one reconstruction as deep as
    // the views are wide; the measure over it alone (the streaks beyond
    // carry the missing wedge, not the content).
    {
        const std::vector<float> deep = measure(0, width);
        out.thickness = specimen_thickness(deep, tomo_geometry(width, rows, width, angles, used));
    }
    std::vector<double> coarse_shifts, coarse_values;
    for (int k = -kReach; k <= kReach; ++k) {
        coarse_shifts.push_back(double(k * fine));
        coarse_values.push_back(sharpness(measure(k * fine, out.thickness), width, out.thickness, rows));
    }
    for (std::size_t k = 0; k < coarse_shifts.size(); ++k)
        out.shifts_px.push_back((coarse_shifts[k] - half) * held_bin), out.sharpness.push_back(coarse_values[k]);
    const int best = int(std::max_element(coarse_values.begin(), coarse_values.end()) - coarse_values.begin());
    SharpestShift found;
    if (best > 0 && best < 2 * kReach) {
        std::vector<double> shifts, values;
        for (int s = (best - kReach - 1) * fine; s <= (best - kReach + 1) * fine; ++s) {
            shifts.push_back(double(s));
            values.push_back(s % fine == 0 ? coarse_values[std::size_t(s / fine + kReach)]
                                           : sharpness(measure(s, out.thickness), width, out.thickness, rows));
        }
        found = sharpest_shift(shifts, values);
    }
    out.ran = true;
    out.seconds = seconds_since(start);
    char line[300];
    if (!found.found) {
        out.why = "the sharpest reconstruction lies at the scan's end";
        std::snprintf(line, sizeof line, "axis place: not moved: %s (%+.1f px) (%.2f s)", out.why.c_str(),
                      out.shifts_px[std::size_t(best)], out.seconds);
        log_line(verbosity, line);
        return out;
    }
    out.moved = true;
    out.shift_px = (found.shift - half) * held_bin;
    AxisGrid frame_grid = grid;
    frame_grid.bin = 1;
    const Transform move = Transform::translation(frame_shift(frame_grid, out.shift_px, 0.0));
    for (FrameResult& f : results) f.offset = move.then(f.offset);
    std::snprintf(line, sizeof line,
                  "axis place: every view moved %+.2f px across the axis, where the reconstruction is sharpest "
                  "(views binned %d, %d px deep) (%.2f s)",
                  out.shift_px, out.binning, out.thickness * out.binning, out.seconds);
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
    j["thickness_px"] = a.thickness * a.binning;
    j["shifts_px"] = a.shifts_px;
    j["sharpness"] = a.sharpness;
    j["seconds"] = a.seconds;
    return j;
}

}  // namespace stackalign
