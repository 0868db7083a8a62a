// Tilt-axis stage after the pairs: with `tilt_axis = "auto"`, the estimate
// made before the search (tilt_axis.hpp) refined from patches tracked
// through the views at their offsets (src/alignment/axis_tracks.hpp).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/alignment/specimen_tilt.hpp"
#include "../../src/io/stack_io.hpp"
#include "../../src/output/frame_tables.hpp"
#include "../plan/stack_plan.hpp"
#include "search_pairs.hpp"

namespace stackalign {

// What the tracks said: the axis before and after, and the last fit.
struct TrackedAxis {
    bool applied = false;  // the axis refined (tilt_axis = "auto")
    bool ran = false;      // the tracks measured (any tilt series whose patches could be followed)
    double before_deg = 0, axis_deg = 0, standard_error = 0;
    int tracks = 0, positions = 0, rounds = 0;
    std::vector<double> per_round;  // the axis after each round
    double residual_px = 0;
    // The per-view along-axis corrections, frame pixels: their RMS, the RMS
    // of their standard errors, and whether they were taken off the offsets.
    double along_rms_px = 0, along_noise_px = 0;
    bool along_applied = false;
    int along_segment_views = 0;  // views a track's along-axis place was held over for them
    // The same across the axis (across_tracks.hpp).
    double across_rms_px = 0, across_noise_px = 0;
    bool across_applied = false;
    int across_segment_views = 0;  // views a segment's point was held over for them
    std::string across_why;  // when not measured
    // The tilt that lays the tracked points level, against the angles the
    // tracks were fitted at (specimen_tilt.hpp).
    SpecimenTilt specimen;
    double seconds = 0;
    std::string why;  // when not applied
};

// The plan's axis refined (tilt_axis, tilt_axis_error, tilt_axis_from_tracks)
// where `plan.tilt_axis_auto`; the views sampled afresh on the new axis and
// tracked again where the first correction was over 0.05 degrees (2
// rounds at most). The views' offsets take the last fit's along-axis
// corrections (pairs searched about a wrong axis stretched their views a
// little along it) where those stand above their own noise, and its
// tracks' across-axis corrections (a thick specimen's depths, which pairs
// of whole views cannot tell apart) where those stand far above theirs.
TrackedAxis refine_axis_by_tracks(StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                  std::vector<FrameResult>& results, Verbosity verbosity);

nlohmann::ordered_json tracked_axis_record(const TrackedAxis& t);

}  // namespace stackalign
