// Accumulate stage: one transform per frame from the pairs, composed
// outward from the reference (chain) or fitted to the neighbour and skip
// pairs together (least squares, each pair's residual recorded), with each
// frame's row of shifts.csv (its pair's score and status; excluded views
// interpolated).
#pragma once
#include <vector>

#include "../../src/output/frame_tables.hpp"
#include "search_pairs.hpp"

namespace stackalign {

std::vector<FrameResult> accumulate_frames(const StackPlan& plan, PairSearch& search);

// Each excluded view's offset between its kept neighbours' again, after a
// later stage moved the kept views.
void place_excluded_views(const StackPlan& plan, std::vector<FrameResult>& results);

}  // namespace stackalign
