// The search of one neighbour pair for a rigid or similarity motion
// (`[search] transform`): every candidate angle (and scale) tried by turning
// the moving view back by it and running the shift search, the best
// candidate refined together with its shift (refine_motion).
#pragma once
#include "../plan/stack_plan.hpp"
#include "preprocess.hpp"
#include "search_pairs.hpp"

namespace stackalign {

struct MotionSearchTimes {
    double search = 0, refine = 0;
};

// Fills pr.peak (the best candidate's shift peak), pr.measured and pr.shift
// (reference content at X appears in the moving view at A (X - c) + c + d);
// `device`: the searcher's, for the refinement's histograms.
void search_motion_pair(const StackPlan& plan, const Device& device, PairSearcher& searcher, PreparedViews& views,
                        PairResult& pr, MotionSearchTimes& times);

}  // namespace stackalign
