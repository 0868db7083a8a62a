#include "tilt_axis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../../src/core/workers.hpp"

namespace stackalign {

StackPlan resolve_tilt_axis(const StackPlan& plan, FrameReader& frames, Verbosity verbosity) {
    if (!plan.tilt_axis_auto) return plan;
    const int f = std::max(1, int(std::ceil(std::max(plan.width, plan.height) / 128.0)));
    const int kept = int(plan.kept.size());
    std::vector<ImageF> views(kept);
    std::vector<double> tilts(kept);
    // Block means: the comparison needs the views' structure, not their
    // finest detail, and views of at most 128 pixels keep the candidate
    // axes cheap. The views read and binned at once, each on a thread
    // (the frame cache keeps them for the search); a frame that cannot be
    // read stops the job with the first such frame's error, as in turn.
    run_tasks(kept, [&](int i) {
        views[i] = block_mean(*frames.read(plan.kept[i]), f).to_float();
        tilts[i] = plan.angles[plan.kept[i]];
    });
    const int reference = plan.kept_reference();
    const int lag = plan.setup.search.max_shift.x / f + 2;
    const TiltAxisEstimate estimate = estimate_tilt_axis(views, tilts, reference, lag, plan.stretch);
    StackPlan out = plan;
    out.tilt_axis = estimate.axis_deg;
    out.tilt_axis_error = estimate.standard_error;
    out.tilt_axis_views = estimate.views;
    char line[160];
    std::snprintf(line, sizeof line, "tilt axis: %.2f +- %.2f degrees from y (%s, %d views compared)",
                  estimate.axis_deg, estimate.standard_error,
                  plan.stretch ? "each view stretched to one nearer the reference" : "common lines", estimate.views);
    log_line(verbosity, line);
    if (plan.mdoc_tilt_axis) {
        // Axes are lines: 85 and -95 degrees are the same one.
        const double off = std::remainder(estimate.axis_deg - *plan.mdoc_tilt_axis, 180.0);
        std::snprintf(line, sizeof line, "%s: the .mdoc's tilt axis %.2f degrees is %.2f degrees from the views'%s",
                      plan.angles_from.c_str(), *plan.mdoc_tilt_axis, off,
                      std::fabs(off) > 2 ? "; the views' is used" : "");
        log_line(verbosity, std::fabs(off) > 2 ? "warning: " + std::string(line) : std::string(line));
    }
    if (!plan.stretch && !plan.projection.on)
        log_line(verbosity, "note: common lines are coarse: on projections of a real volume they landed 1-2 degrees from "
                            "the true axis, more than their standard error says; give tilt_axis if it is known, or "
                            "turn on projection_matching, which refines it");
    return out;
}

}  // namespace stackalign
