#include "level_specimen.hpp"

#include <cmath>
#include <cstdio>

namespace stackalign {

void level_by_tracks(StackPlan& plan, std::vector<FrameResult>& results, const TrackedAxis& tracked,
                     const SlabFit& slab, Verbosity verbosity) {
    if (!plan.tilt_offset_levelling || !tracked.specimen.found) return;
    // The slab fit runs where the content fills the slab's depth; its
    // points' plane is then the content's, and at 512 px they passed the
    // planes' bound: the zebrafish slab 1.4 degrees off, five layers 5.4,
    // the wide slab 6.1, with stated errors of 0.5-0.7 (H200, `python3
    // bench/tilt_accuracy.py --size 512 --noise 1000 --no-reference
    // --variants defaults --backends cuda`). Where it did not run, the
    // angles are still those the tracks were fitted at (plan.tilt_offset).
    if (slab.ran) return;
    const SpecimenTilt& s = tracked.specimen;
    char line[400];
    if (!s.planar) {
        std::snprintf(line, sizeof line,
                      "tilt offset: the tracked points lie in no plane (spread %.2f px, up to %.2f degrees of tilt); "
                      "the tracks leave the offset as it is",
                      s.spread_px, s.content_bound_deg);
        log_line(verbosity, line);
        return;
    }
    const double found = plan.tilt_offset + s.offset_deg;
    const bool level = std::fabs(found) > 2 * s.stated_error;
    const double change = (level ? found : 0.0) - plan.tilt_offset;
    for (double& t : plan.angles) t += change;
    for (FrameResult& f : results) f.tilt += change;  // NaN where the series has no angles
    if (plan.tilt_offset_auto) plan.pairs_tilt_offset = plan.tilt_offset;
    plan.tilt_offset = level ? found : 0.0;
    plan.tilt_offset_error = s.stated_error;
    plan.tilt_offset_auto = false;
    plan.tilt_offset_from_tracks = true;
    std::snprintf(line, sizeof line,
                  "tilt offset: %+.2f +- %.2f degrees lays the %d tracked points level (%d plane%s, spread %.2f px)%s",
                  found, s.stated_error, s.points, s.layers, s.layers == 1 ? "" : "s", s.spread_px,
                  level ? "; added to the angles read" : "; within 2 standard errors of 0: the angles are those read");
    log_line(verbosity, line);
}

void take_angles_as_read(StackPlan& plan, std::vector<FrameResult>& results, const std::string& why,
                         Verbosity verbosity) {
    if (!(plan.tilt_offset_auto || plan.tilt_offset_from_tracks) || plan.tilt_offset == 0) return;
    const double offset = plan.tilt_offset;
    for (double& t : plan.angles) t -= offset;
    for (FrameResult& f : results) f.tilt -= offset;  // NaN where the series has no angles
    if (plan.tilt_offset_auto) plan.pairs_tilt_offset = offset;
    plan.tilt_offset = 0;
    plan.tilt_offset_auto = false;
    plan.tilt_offset_from_tracks = false;
    plan.angles_as_read_why = why;
    char line[160];
    std::snprintf(line, sizeof line, "tilt offset: the angles written are those read, not %+.2f degrees added: ", offset);
    log_line(verbosity, line + why);
}

}  // namespace stackalign
