#include "centre_of_mass.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../../kernels/axis_grid/axis_grid.hpp"
#include "../../src/alignment/projection_views.hpp"
#include "../../src/alignment/view_moments.hpp"
#include "accumulate.hpp"
#include "view_chunks.hpp"

namespace stackalign {
namespace {

// The checks' bounds: a slice clear of the views' sides, and the same
// object (its mass) in every view.
constexpr double kEdgeShare = 0.01, kMassSpread = 0.03;
// The slices whole in every view must hold at least this share of each
// view's mass; the centre along the axis is used only where they hold all
// but kEdgeShare of it (a selection that cuts through the object moves
// its centre along as the views move).
constexpr double kLeastWhole = 0.5;
// Two passes: the second takes up what sampling the moved views adds. On
// the whole-object series of `python3 bench/tilt_accuracy.py --cases whole`
// one, two and three passes all gave 0.005 px (no noise) and 0.035 (1000
// photons): the second pass is a safeguard no measurement has needed yet.
constexpr int kPasses = 2;

// Each used view's rows' moments at its current offset (sampled on the plan's device).
std::vector<RowMoments> moments_at(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                                   const std::vector<int>& used, const AxisGrid& grid) {
    std::vector<RowMoments> moments(used.size());
    for_each_view_read(frames, used, [&](std::size_t k, const RawFrame& frame) {
        std::vector<float> samples(std::size_t(grid.width) * grid.rows);
        sample_on_axis_grid(frame, results[used[k]].offset, grid, samples.data(), plan.device);
        moments[k] = row_moments(samples.data(), grid.width, grid.rows);
    });
    return moments;
}

std::vector<ViewMoments> over_rows(const std::vector<RowMoments>& rows, const std::vector<char>& whole) {
    std::vector<ViewMoments> views;
    for (const RowMoments& r : rows) views.push_back(moments_over_rows(r, whole));
    return views;
}

bool along_usable(const std::vector<ViewMoments>& views) {
    for (const ViewMoments& v : views)
        if (v.left_out > kEdgeShare) return false;
    return true;
}

// Each view's misplacement over the `whole` rows: across by their centre
// of mass, along by it where `along` (the rows hold the whole object), else
// by their masses.
std::vector<Shift> misplacements(const std::vector<RowMoments>& rows, const std::vector<ViewMoments>& moments,
                                 const std::vector<char>& whole, const std::vector<double>& angles, bool along) {
    std::vector<Shift> off = moment_misplacements(moments, angles);
    if (!along) {
        const std::vector<double> e = along_by_row_masses(rows, whole);
        for (std::size_t k = 0; k < off.size(); ++k) off[k].dy = e[k];
    }
    return off;
}

std::vector<double> angles_of(const StackPlan& plan, const std::vector<int>& used) {
    std::vector<double> angles;
    for (int v : used) angles.push_back(plan.angles[v]);
    return angles;
}

}  // namespace

CentreOfMassResult centre_views_by_mass(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                        std::vector<FrameResult>& results, Verbosity verbosity) {
    CentreOfMassResult out;
    out.why = plan.centre_of_mass_why;
    if (!plan.centre_of_mass) return out;
    const std::vector<int> used = usable_views(plan, search);
    const std::vector<double> angles = angles_of(plan, used);
    const AxisGrid grid = axis_grid(plan.width, plan.height, plan.tilt_axis, 1);
    std::vector<Shift> total(used.size());
    std::vector<char> whole;
    bool along = true;
    for (int pass = 0; pass < kPasses; ++pass) {
        const std::vector<RowMoments> rows = moments_at(plan, frames, results, used, grid);
        if (pass == 0) whole = rows_whole_in_every_view(rows, kEdgeShare);
        const std::vector<ViewMoments> moments = over_rows(rows, whole);
        if (pass == 0) {
            const std::string unusable = moments_unusable(moments, used, kLeastWhole, kMassSpread);
            if (!unusable.empty()) {
                out.why += "; not used: " + unusable;
                log_line(verbosity, std::string(plan.centre_of_mass_forced ? "warning: " : "") +
                                        "centres of mass not used: " + unusable);
                return out;
            }
            along = along_usable(moments);
            for (char w : whole) out.rows_used += w;
            out.rows = int(whole.size());
        }
        const std::vector<Shift> off = misplacements(rows, moments, whole, angles, along);
        // What is left across once the fit's a cos t + b sin t is removed is
        // c plus the fit's residual, whose mean is 0: c, the tilt axis's place.
        double axis_off = 0;
        for (const Shift& d : off) axis_off += d.dx / double(off.size());
        out.axis_off += axis_off;
        for (std::size_t k = 0; k < used.size(); ++k) {
            const Shift d = frame_shift(grid, off[k].dx, off[k].dy);
            results[used[k]].offset = Transform::translation(d).then(results[used[k]].offset);
            total[k].dx += d.dx, total[k].dy += d.dy;
        }
    }
    out.along = along;
    double squares = 0;
    for (const Shift& d : total) {
        const double m = std::hypot(d.dx, d.dy);
        squares += m * m, out.moved_max = std::max(out.moved_max, m);
    }
    out.moved_rms = std::sqrt(squares / double(std::max<std::size_t>(1, total.size())));
    // Excluded views (and views that could not be aligned) between their neighbours again.
    place_excluded_views(plan, results);
    out.applied = true;
    char line[400];
    std::snprintf(line, sizeof line,
                  "centres of mass: the tilt axis lay %.3f px off the views' centre; views moved %.3f px RMS, %.3f "
                  "px at most%s",
                  out.axis_off, out.moved_rms, out.moved_max,
                  out.rows_used == out.rows ? ""
                  : out.along ? " (from the slices every view shows whole)"
                              : " (from the slices every view shows whole; along the axis by their masses: the "
                                "object leaves the views)");
    log_line(verbosity, line);
    return out;
}

double moment_misplacement_rms(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                               const std::vector<FrameResult>& results) {
    const std::vector<int> used = usable_views(plan, search);
    const AxisGrid grid = axis_grid(plan.width, plan.height, plan.tilt_axis, 1);
    const std::vector<RowMoments> rows = moments_at(plan, frames, results, used, grid);
    const std::vector<char> whole = rows_whole_in_every_view(rows, kEdgeShare);
    const std::vector<ViewMoments> views = over_rows(rows, whole);
    double squares = 0;
    for (const Shift& d : misplacements(rows, views, whole, angles_of(plan, used), along_usable(views)))
        squares += d.dx * d.dx + d.dy * d.dy;
    return std::sqrt(squares / double(std::max<std::size_t>(1, used.size())));
}

void judge_by_centres_of_mass(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                              const CentreOfMassResult& centred, const std::vector<FrameResult>& before,
                              std::vector<FrameResult>& results, ProjectionMatchResult& matched, Verbosity verbosity) {
    if (!centred.applied) return;
    const double was = moment_misplacement_rms(plan, frames, search, before);
    const double now = moment_misplacement_rms(plan, frames, search, results);
    char why[160];
    std::snprintf(why, sizeof why, "centres of mass %.3f px RMS from a whole object's after matching, %.3f before", now,
                  was);
    matched.kept_why = why;
    if (now > was) {
        results = before;
        matched.kept = false;
        log_line(verbosity, std::string("projection matching not kept: ") + why);
    }
}

nlohmann::ordered_json centre_of_mass_record(const CentreOfMassResult& r) {
    return {{"applied", r.applied},         {"chosen_by", r.why},
            {"moved_rms_px", r.moved_rms},  {"moved_max_px", r.moved_max},
            {"tilt_axis_off_px", r.axis_off}, {"rows_used", r.rows_used}, {"rows", r.rows},
            {"along_applied", r.along}};
}

}  // namespace stackalign
