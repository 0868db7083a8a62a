// Projection-matching stage of a tilt series (after accumulate): the views,
// placed by the pairs, are reconstructed (weighted back-projection on a
// binned grid), each view's reprojection is made from the others
// (kernels/tomo), and each view is aligned to it by the window search and
// the continuous refinement; repeated until no view moves by more than the
// tolerance. Pairs chained along a series sum their parallax and errors; a
// reprojection has neither.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/output/frame_tables.hpp"
#include "search_pairs.hpp"

namespace stackalign {

struct ProjectionMatchResult {
    int binning = 1, thickness = 0;        // as used (resolved when "auto"); thickness in unbinned pixels
    int grid_width = 0, grid_rows = 0;     // the binned views, across and along the axis
    bool across = true;                    // views moved across the axis too (ProjectionMatchPlan::across)
    std::string moves;                     // how the views were moved, in words
    std::vector<double> max_move, rms_move;  // per round, pixels: how far the views moved
    bool converged = false;
    // projection_moves = "sine": per round, the line c sin t along the axis
    // as measured (frame pixels a radian), its standard error, and as
    // applied (0 where within two errors of none)
    std::vector<double> sine_px, sine_error_px, sine_applied_px;
    // Whether its offsets were kept; where the centres of mass judged them
    // worse than the pairs', they were not (why says so).
    bool kept = true;
    std::string kept_why;
    double thickness_seconds = 0;          // "auto" thickness: the first, deep reconstruction
    std::vector<double> reconstruct_seconds, match_seconds;  // per round
    // tilt_axis = "auto": the axis refined with the offsets (degrees from y), after each round
    double tilt_axis = 0;
    std::vector<double> axis_per_round, axis_seconds;
    // false where the agreement kept rising to the edge of the reach
    // allowed: the views' estimate is kept
    bool axis_refined = true;
};

// Moves results' offsets (kept views matched, excluded ones interpolated
// again), keeping each view's offset before it in `coarse` and its last
// round's move in `projection_residual`.
ProjectionMatchResult match_projections(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                        std::vector<FrameResult>& results, StageTimes& times, Verbosity verbosity);

nlohmann::ordered_json projection_record(const ProjectionMatchResult& r);

}  // namespace stackalign
