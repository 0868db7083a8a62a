// Centres of mass ([alignment] center_of_mass): a whole object's views
// placed by their first moments (src/alignment/view_moments.hpp), after the
// tracks and before the slab fit (which a whole object skips) and
// projection matching, over the slices (grid rows) every
// view shows whole. On the whole-object series of `python3
// bench/tilt_accuracy.py` (+-90 degrees) the pairs leave 0.43 px
// gauge-free, the moments 0.005 without noise and 0.035 at 1000 photons a
// pixel; jittered by up to 10 px, the object's ends run past the views'
// ends and whole views' moments were refused (0.92 px; by the whole
// slices 0.04). "auto" uses them on any tilt series whose views pass the
// checks (the whole slices hold at least half of every view's mass, their
// masses within 3 % of the median); a slab's material enters and leaves
// the views at their sides and fails them, so its moments say nothing.
// With tilt_axis = "auto" the axis is then turned until every view's slice
// masses agree (axis_turn_by_row_masses): 0.00-0.03 degrees off on the
// bench's whole objects, where the tracks left 0.2-0.56 over +-60 degrees
// or under 10 px of jitter (docs/tomography.md#axis-by-slice-masses).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/io/stack_io.hpp"
#include "../../src/output/frame_tables.hpp"
#include "match_projections.hpp"
#include "search_pairs.hpp"

namespace stackalign {

struct CentreOfMassResult {
    bool applied = false;
    std::string why;                 // what decided it
    double moved_rms = 0, moved_max = 0;  // pixels: how far the views moved
    double axis_off = 0;  // pixels: how far off the views' centre the tilt axis lay (every view moved by it)
    int rows_used = 0, rows = 0;  // the grid's rows (slices) whole in every view, of all
    bool along = false;           // the views moved along the axis too (the object inside them along it)
    // "auto" tilt axis: turned until every view's slice masses agree.
    double axis = 0, axis_error = 0;  // degrees, and the standard error
    int axis_rounds = 0;              // turns taken; none: the axis stands as it came
    bool axis_refined() const { return axis_rounds > 0; }
    std::string axis_why;  // why not refined, where it was tried
};

// Moves results' offsets of the views the pairs placed (excluded ones
// interpolated again) where the plan and the views allow.
CentreOfMassResult centre_views_by_mass(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                        std::vector<FrameResult>& results, Verbosity verbosity);

// How far the views' centres of mass are from where a whole object's would
// be (RMS of their misplacements, pixels) at two sets of offsets: evidence
// of the offsets that does not come from matching them, so it can judge
// projection matching's. Both are taken over the same slices, those every
// view shows whole at either set, so the two compare like for like (a
// selection made for each set alone could differ at the object's ends).
struct MisplacementRms {
    double first = 0, second = 0;
};
MisplacementRms moment_misplacement_rms(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                        const std::vector<FrameResult>& first, const std::vector<FrameResult>& second);

// Projection matching, where the centres of mass placed the views, is
// never left worse than it started: if the views' centres lie farther from
// a whole object's after it than `before`, `results` go back to `before`
// and `matched` says it was not kept, and why (kept_why says both RMS).
void judge_by_centres_of_mass(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                              const CentreOfMassResult& centred, const std::vector<FrameResult>& before,
                              std::vector<FrameResult>& results, ProjectionMatchResult& matched, Verbosity verbosity);

nlohmann::ordered_json centre_of_mass_record(const CentreOfMassResult& r);

}  // namespace stackalign
