// Accumulate stage: the pairs' transforms composed outward from the
// reference into one transform per frame, with each frame's row of
// shifts.csv (its pair's score and status; excluded views interpolated).
#pragma once
#include <vector>

#include "../../src/output/frame_tables.hpp"
#include "search_pairs.hpp"

namespace stackalign {

std::vector<FrameResult> accumulate_frames(const StackPlan& plan, const std::vector<PairResult>& pairs);

}  // namespace stackalign
