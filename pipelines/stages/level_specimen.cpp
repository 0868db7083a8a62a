#include "level_specimen.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "grid_views.hpp"

namespace stackalign {

namespace {

// Levelling's view binning: at most this many pixels across the axis, the
// scale its filters were measured at (`python3 bench/slab_plane.py
// --reconstruct`, 256 px).
constexpr int kLevelWidth = 256;
// Every kLevelRowStep-th slice: the plane's map is a sum over slices.
constexpr int kLevelRowStep = 2;

// The angles moved to `found` added to those read (or to those read, within
// 2 stated errors of 0); whether it was.
bool lay_level(StackPlan& plan, std::vector<FrameResult>& results, double found, double stated_error,
               StackPlan::LevelledBy by) {
    const bool level = std::fabs(found) > 2 * stated_error;
    const double change = (level ? found : 0.0) - plan.tilt_offset;
    for (double& t : plan.angles) t += change;
    for (FrameResult& f : results) f.tilt += change;  // NaN where the series has no angles
    if (plan.tilt_offset_auto) plan.pairs_tilt_offset = plan.tilt_offset;
    plan.tilt_offset = level ? found : 0.0;
    plan.tilt_offset_error = stated_error;
    plan.tilt_offset_auto = false;
    plan.tilt_offset_levelled_by = by;
    plan.angles_as_read_why.clear();
    return level;
}

}  // namespace

bool level_by_tracks(StackPlan& plan, std::vector<FrameResult>& results, const TrackedAxis& tracked,
                     const SlabFit& slab, Verbosity verbosity) {
    if (!plan.tilt_offset_levelling || !tracked.specimen.found) return false;
    // The slab fit runs where the content fills the slab's depth; its
    // points' plane is then the content's, and at 512 px they passed the
    // planes' bound: the zebrafish slab 1.4 degrees off, five layers 5.4,
    // the wide slab 6.1, with stated errors of 0.5-0.7 (H200, `python3
    // bench/tilt_accuracy.py --size 512 --noise 1000 --no-reference
    // --variants defaults --backends cuda`). Where it did not run, the
    // angles are still those the tracks were fitted at (plan.tilt_offset).
    if (slab.ran && !slab.on_layers) return false;
    const SpecimenTilt& s = tracked.specimen;
    char line[400];
    if (!s.planar) {
        std::snprintf(line, sizeof line,
                      "tilt offset: the tracked points lie in no plane (spread %.2f px, up to %.2f degrees of tilt); "
                      "the tracks leave the offset as it is",
                      s.spread_px, s.content_bound_deg);
        log_line(verbosity, line);
        return false;
    }
    const double found = plan.tilt_offset + s.offset_deg;
    const bool level = lay_level(plan, results, found, s.stated_error, StackPlan::LevelledBy::tracks);
    std::snprintf(line, sizeof line,
                  "tilt offset: %+.2f +- %.2f degrees lays the %d tracked points level (%d plane%s, spread %.2f px)%s",
                  found, s.stated_error, s.points, s.layers, s.layers == 1 ? "" : "s", s.spread_px,
                  level ? "; added to the angles read" : "; within 2 standard errors of 0: the angles are those read");
    log_line(verbosity, line);
    return true;
}

std::string why_not_level_by_reconstruction(const SlabFit& slab) {
    if (!slab.ran || slab.on_layers || slab.depth_chosen_by != "knee") return "";
    char why[200];
    std::snprintf(why, sizeof why, "the content fills a slab %.0f px deep (the slab fit's knee), and such content has no plane",
                  slab.thickness_px);
    return why;
}

ReconstructedLevel level_by_reconstruction(StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                           std::vector<FrameResult>& results, const SlabFit& slab,
                                           Verbosity verbosity) {
    ReconstructedLevel out;
    if (!plan.tilt_offset_levelling || plan.angles.empty()) return out;
    out.why_not_run = why_not_level_by_reconstruction(slab);
    if (!out.why_not_run.empty()) {
        log_line(verbosity, "tilt offset: the reconstruction is not asked to lay it level: " + out.why_not_run);
        return out;
    }
    const auto start = std::chrono::steady_clock::now();
    const AxisGrid grid = axis_grid(plan.width, plan.height, plan.tilt_axis, binning_to_width(plan, kLevelWidth));
    const std::vector<int> order = usable_views(plan, search);
    std::vector<float> views(std::size_t(grid.width) * grid.rows * plan.frames, 0.0f);
    grid_views(plan, frames, results, grid, order, views);
    const SliceVolume r =
        every_nth_slice_volume(plan, views, grid, frames_in(plan.frames, order), kLevelRowStep, grid.width / 2);
    out.ran = true;
    out.plane = specimen_plane(r.volume, r.geometry.width, r.geometry.thickness, r.geometry.rows);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char line[400];
    if (!out.plane.found) {
        log_line(verbosity, "tilt offset: the reconstruction's content is not laid level: " + out.plane.why_not);
        return out;
    }
    const double found = plan.tilt_offset + out.plane.offset_deg;
    const bool level =
        lay_level(plan, results, found, out.plane.standard_error, StackPlan::LevelledBy::reconstruction);
    std::snprintf(line, sizeof line, "tilt offset: %+.2f +- %.2f degrees lays the reconstruction's content level%s", found,
                  out.plane.standard_error,
                  level ? "; added to the angles read" : "; within 2 standard errors of 0: the angles are those read");
    log_line(verbosity, line);
    return out;
}

nlohmann::ordered_json reconstructed_level_record(const ReconstructedLevel& r) {
    nlohmann::ordered_json j;
    j["ran"] = r.ran;
    if (!r.ran) {
        if (!r.why_not_run.empty()) j["why_not"] = r.why_not_run;
        return j;
    }
    j["found"] = r.plane.found;
    j["offset"] = r.plane.offset_deg;
    j["standard_error"] = r.plane.standard_error;
    j["by_gradients"] = r.plane.tensor_deg;
    j["by_depth_profile"] = r.plane.profile_deg;
    if (!r.plane.why_not.empty()) j["why_not"] = r.plane.why_not;
    j["seconds"] = r.seconds;
    return j;
}

void take_angles_as_read(StackPlan& plan, std::vector<FrameResult>& results, const std::string& why,
                         Verbosity verbosity) {
    if (!(plan.tilt_offset_auto || plan.tilt_offset_levelled()) || plan.tilt_offset == 0) return;
    const double offset = plan.tilt_offset;
    for (double& t : plan.angles) t -= offset;
    for (FrameResult& f : results) f.tilt -= offset;  // NaN where the series has no angles
    if (plan.tilt_offset_auto) plan.pairs_tilt_offset = offset;
    plan.tilt_offset = 0;
    plan.tilt_offset_auto = false;
    plan.tilt_offset_levelled_by = StackPlan::LevelledBy::none;
    plan.angles_as_read_why = why;
    char line[160];
    std::snprintf(line, sizeof line, "tilt offset: the angles written are those read, not %+.2f degrees added: ", offset);
    log_line(verbosity, line + why);
}

}  // namespace stackalign
