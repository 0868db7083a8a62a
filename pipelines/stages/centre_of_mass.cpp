#include "centre_of_mass.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>

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
// The axis by the slice masses (turn_axis_by_slice_masses): the turns that
// give the profiles' slope, the largest turn believed (the tracks' axis is
// within a few tenths of a degree), the turn below which the axis has
// settled, and the rounds at most.
constexpr double kAxisStep = 0.25, kAxisReach = 2.0, kAxisSettled = 0.005;
constexpr int kAxisRounds = 4;

// The rows whole in every view of every set of views (one selection for
// views sampled at several offsets or axes).
std::vector<char> rows_whole_in_all(std::initializer_list<const std::vector<RowMoments>*> sets) {
    std::vector<RowMoments> all;
    for (const std::vector<RowMoments>* set : sets) all.insert(all.end(), set->begin(), set->end());
    return rows_whole_in_every_view(all, kEdgeShare);
}

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

// One pass: the used views' misplacements over the `whole` rows at their
// current offsets on `grid` (`moments`: over_rows(rows, whole)), taken off;
// each pass's moves added to `total`, the axis's place to out.axis_off.
void centre_once(std::vector<FrameResult>& results, const std::vector<int>& used, const std::vector<double>& angles,
                 const AxisGrid& grid, const std::vector<RowMoments>& rows, const std::vector<ViewMoments>& moments,
                 const std::vector<char>& whole, bool along, std::vector<Shift>& total, CentreOfMassResult& out) {
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

// The tilt axis turned until the views' slice masses agree
// (axis_turn_by_row_masses), each turn followed by a pass of the centres
// at it.
void turn_axis_by_slice_masses(const StackPlan& plan, FrameReader& frames, std::vector<FrameResult>& results,
                               const std::vector<int>& used, const std::vector<double>& angles, bool along,
                               std::vector<Shift>& total, CentreOfMassResult& out) {
    double axis = plan.tilt_axis, error = 0;
    for (int round = 0; round < kAxisRounds; ++round) {
        auto rows_about = [&](double a) {
            return moments_at(plan, frames, results, used, axis_grid(plan.width, plan.height, a, 1));
        };
        const std::vector<RowMoments> at = rows_about(axis), plus = rows_about(axis + kAxisStep),
                                      minus = rows_about(axis - kAxisStep);
        const AxisTurn turn = axis_turn_by_row_masses(at, plus, minus, kAxisStep, rows_whole_in_all({&at, &plus, &minus}));
        if (!turn.usable() || std::fabs(turn.degrees) > kAxisReach) {
            char reach[160];
            std::snprintf(reach, sizeof reach, "the slice masses asked for a turn of %.2f degrees, beyond the %.0f allowed",
                          turn.degrees, kAxisReach);
            out.axis_why = turn.usable() ? reach : turn.why_not;
            break;
        }
        axis += turn.degrees, error = turn.standard_error;
        ++out.axis_rounds;
        const AxisGrid grid = axis_grid(plan.width, plan.height, axis, 1);
        const std::vector<RowMoments> rows = moments_at(plan, frames, results, used, grid);
        const std::vector<char> whole = rows_whole_in_every_view(rows, kEdgeShare);
        centre_once(results, used, angles, grid, rows, over_rows(rows, whole), whole, along, total, out);
        if (std::fabs(turn.degrees) < kAxisSettled) break;
    }
    if (!out.axis_refined()) return;
    out.axis = axis;
    out.axis_error = error;
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
        centre_once(results, used, angles, grid, rows, moments, whole, along, total, out);
    }
    out.along = along;
    if (plan.tilt_axis_auto) turn_axis_by_slice_masses(plan, frames, results, used, angles, along, total, out);
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
    if (out.axis_refined()) {
        std::snprintf(line, sizeof line,
                      "tilt axis: %.3f degrees by the slice masses (from %.3f; +- %.3f standard error, %d rounds)",
                      out.axis, plan.tilt_axis, out.axis_error, out.axis_rounds);
        log_line(verbosity, line);
    } else if (!out.axis_why.empty())
        log_line(verbosity, "tilt axis: not refined by the slice masses: " + out.axis_why);
    return out;
}

MisplacementRms moment_misplacement_rms(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                       const std::vector<FrameResult>& first, const std::vector<FrameResult>& second) {
    const std::vector<int> used = usable_views(plan, search);
    const std::vector<double> angles = angles_of(plan, used);
    const AxisGrid grid = axis_grid(plan.width, plan.height, plan.tilt_axis, 1);
    const std::vector<RowMoments> a = moments_at(plan, frames, first, used, grid);
    const std::vector<RowMoments> b = moments_at(plan, frames, second, used, grid);
    // One selection for both: the rows whole in every view at either set of offsets.
    const std::vector<char> whole = rows_whole_in_all({&a, &b});
    const std::vector<ViewMoments> at_a = over_rows(a, whole), at_b = over_rows(b, whole);
    const bool along = along_usable(at_a) && along_usable(at_b);
    auto rms = [&](const std::vector<RowMoments>& rows, const std::vector<ViewMoments>& views) {
        double squares = 0;
        for (const Shift& d : misplacements(rows, views, whole, angles, along)) squares += d.dx * d.dx + d.dy * d.dy;
        return std::sqrt(squares / double(std::max<std::size_t>(1, used.size())));
    };
    return {rms(a, at_a), rms(b, at_b)};
}

void judge_by_centres_of_mass(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                              const CentreOfMassResult& centred, const std::vector<FrameResult>& before,
                              std::vector<FrameResult>& results, ProjectionMatchResult& matched, Verbosity verbosity) {
    if (!centred.applied) return;
    const MisplacementRms m = moment_misplacement_rms(plan, frames, search, before, results);
    const double was = m.first, now = m.second;
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
    nlohmann::ordered_json j = {{"applied", r.applied},           {"chosen_by", r.why},
                                {"moved_rms_px", r.moved_rms},    {"moved_max_px", r.moved_max},
                                {"tilt_axis_off_px", r.axis_off}, {"rows_used", r.rows_used},
                                {"rows", r.rows},                 {"along_applied", r.along},
                                {"axis_refined", r.axis_refined()}};
    if (r.axis_refined()) j["axis"] = r.axis, j["axis_standard_error"] = r.axis_error, j["axis_rounds"] = r.axis_rounds;
    if (!r.axis_why.empty()) j["axis_not_refined"] = r.axis_why;
    return j;
}

}  // namespace stackalign
