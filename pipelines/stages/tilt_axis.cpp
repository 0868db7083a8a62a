#include "tilt_axis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../../kernels/view_correlation/view_correlation.hpp"
#include "../../src/core/error.hpp"
#include "../../src/core/workers.hpp"

namespace stackalign {

namespace {

MakeViewCorrelator view_correlator(const Device& device) {
    return [device](const std::vector<std::vector<float>>& views, int width, int height, int max_lag) {
        return make_view_correlator(views, width, height, max_lag, device);
    };
}

// The axis's estimate, into the plan.
void resolve_axis(StackPlan& plan, const std::vector<ImageF>& views, const std::vector<double>& tilts, int lag,
                  Verbosity verbosity) {
    TiltAxisEstimate estimate;
    try {
        estimate = estimate_tilt_axis(views, tilts, plan.kept_reference(), lag, plan.stretch, view_correlator(plan.device));
    } catch (const InputError& why) {
        // Asked for, the views must show it; the default falls back to the
        // axis it started from.
        if (plan.tilt_axis_asked) throw;
        char line[120];
        std::snprintf(line, sizeof line, "; the axis is taken as %.2f degrees from y", plan.tilt_axis);
        log_line(verbosity, std::string("tilt axis: \"auto\" skipped: ") + why.what() + line);
        plan.tilt_axis_auto = false;
        return;
    }
    plan.tilt_axis = estimate.axis_deg;
    plan.tilt_axis_error = estimate.standard_error;
    plan.tilt_axis_views = estimate.views;
    char line[200];
    std::snprintf(line, sizeof line, "tilt axis: %.2f +- %.2f degrees from y (%s, %d views compared)",
                  estimate.axis_deg, estimate.standard_error,
                  plan.stretch ? "each view stretched to one nearer the reference" : "common lines", estimate.views);
    log_line(verbosity, line);
    log_mdoc_axis_gap(plan, estimate.axis_deg, "views'", verbosity);
    if (!plan.stretch)
        log_line(verbosity, "note: common lines are coarse: on projections of a real volume they landed 1-2 degrees from "
                            "the true axis, more than their standard error says; patches tracked through the aligned "
                            "views refine it after the pairs");
}

// The views of the series binned by block means of `f` pixels, each on a
// thread (the frame cache keeps them for the search); a frame that cannot
// be read stops the job with the first such frame's error, as in turn.
std::vector<ImageF> binned_views(const StackPlan& plan, FrameReader& frames, int f) {
    std::vector<ImageF> views(plan.kept.size());
    run_tasks(int(plan.kept.size()), [&](int i) { views[i] = block_mean(*frames.read(plan.kept[i]), f).to_float(); });
    return views;
}

// The block size that brings the frames to at most `side` pixels.
int bin_to(const StackPlan& plan, double side) {
    return std::max(1, int(std::ceil(std::max(plan.width, plan.height) / side)));
}
// The lags views binned by `f` are compared over: the search's reach, binned, and 2 more.
int binned_lag(const StackPlan& plan, int f) { return plan.setup.search.max_shift.x / f + 2; }

// The offset's estimate, added to the plan's angles (a slab's only), from
// `views` (the axis's) and then the frames binned to at most 256 px.
void resolve_tilt_offset(StackPlan& plan, const std::vector<ImageF>& views, int f, const std::vector<double>& tilts,
                         FrameReader& frames, Verbosity verbosity) {
    if (!plan.stretch) {
        if (plan.tilt_offset_asked)
            log_line(verbosity, "warning: tilt_offset = \"auto\" is for a slab (cosine stretching on, or \"auto\" within "
                                "80 degrees); a whole object's views fix no zero tilt (an offset only turns its "
                                "reconstruction): the angles are used as read");
        plan.tilt_offset_auto = plan.tilt_offset_levelling = false;
        return;
    }
    // Then views of up to 256 px: the offset that stretches the views'
    // finer detail best is nearer the one that leaves the pairs (searched
    // at full resolution) least error. On the bench's slabs 8 of 9 cases
    // (3 series x 3 noise levels) gained and one stayed, 0.093 -> 0.084,
    // 0.108 -> 0.099 and 0.118 -> 0.089 px at 1000 photons (`python3
    // bench/tilt_accuracy.py --cases slab slab-offset slab-oblique --noise 0
    // 1000 100 --variants defaults`; the views there are 256 px across the
    // axis, so unbinned). The whole search on them took the 2-core CPU
    // job's estimate from 1.2 s to 12.4; taken on from the 128 px estimate
    // (estimate_tilt_offset's `finer`), 6.6.
    const int f_finer = bin_to(plan, 256.0);
    const std::vector<ImageF> finer = f_finer < f ? binned_views(plan, frames, f_finer) : std::vector<ImageF>{};
    TiltOffsetEstimate e;
    try {
        e = estimate_tilt_offset(views, tilts, plan.kept_reference(), binned_lag(plan, f), plan.tilt_axis,
                                 view_correlator(plan.device), finer, binned_lag(plan, f_finer));
    } catch (const InputError& why) {
        if (plan.tilt_offset_asked) throw;
        log_line(verbosity, std::string("tilt offset: \"auto\" skipped: ") + why.what());
        plan.tilt_offset_auto = false;
        return;
    }
    if (e.at_edge && !plan.tilt_offset_asked) {
        log_line(verbosity, "tilt offset: \"auto\" found no clear peak within the range searched; the angles are used "
                            "as read");
        plan.tilt_offset_auto = false;
        return;
    }
    // The default changes the angles written (the .tlt) only where the
    // views show an offset: the HAADF needle cut to +-80 degrees, a whole
    // object the range rule takes for a slab, gave +0.49 +- 0.33.
    if (!plan.tilt_offset_asked && std::fabs(e.offset_deg) <= 2 * e.standard_error) {
        char line[200];
        std::snprintf(line, sizeof line,
                      "tilt offset: %+.2f +- %.2f degrees is within 2 standard errors of 0; the angles are used as read",
                      e.offset_deg, e.standard_error);
        log_line(verbosity, line);
        plan.tilt_offset_auto = false;
        return;
    }
    plan.tilt_offset = e.offset_deg;
    plan.tilt_offset_error = e.standard_error;
    for (double& t : plan.angles) t += e.offset_deg;
    char line[200];
    std::snprintf(line, sizeof line, "tilt offset: %+.2f +- %.2f degrees added to every angle (%d views compared)%s",
                  e.offset_deg, e.standard_error, e.views,
                  e.at_edge ? "; at the end of the range searched: no clear peak" : "");
    log_line(verbosity, e.at_edge ? "warning: " + std::string(line) : std::string(line));
}

}  // namespace

void log_mdoc_axis_gap(const StackPlan& plan, double axis_deg, const char* whose, Verbosity verbosity) {
    if (!plan.mdoc_tilt_axis) return;
    // Axes are lines: 85 and -95 degrees are the same one.
    const double off = std::remainder(axis_deg - *plan.mdoc_tilt_axis, 180.0);
    const bool far = std::fabs(off) > 2;
    const std::string used = far ? std::string("; the ") + whose + " is used" : "";
    char line[240];
    std::snprintf(line, sizeof line, "%s: the .mdoc's tilt axis %.2f degrees is %.2f degrees from the %s%s",
                  plan.angles_from.c_str(), *plan.mdoc_tilt_axis, off, whose, used.c_str());
    log_line(verbosity, far ? "warning: " + std::string(line) : std::string(line));
}

StackPlan resolve_tilt_axis(const StackPlan& plan, FrameReader& frames, Verbosity verbosity) {
    if (!plan.tilt_axis_auto && !plan.tilt_offset_auto) return plan;
    std::vector<double> tilts;
    for (int k : plan.kept) tilts.push_back(plan.angles[k]);
    StackPlan out = plan;
    // Block means: the comparisons need the views' structure, not their
    // finest detail, and views of at most 128 pixels keep the candidates
    // cheap. The axis first: the offset's stretches are about it.
    const int f = bin_to(plan, 128.0);
    const std::vector<ImageF> views = binned_views(plan, frames, f);
    if (plan.tilt_axis_auto) resolve_axis(out, views, tilts, binned_lag(plan, f), verbosity);
    if (plan.tilt_offset_auto) resolve_tilt_offset(out, views, f, tilts, frames, verbosity);
    return out;
}

}  // namespace stackalign
