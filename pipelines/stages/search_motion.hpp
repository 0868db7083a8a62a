// The search of one neighbour pair for a rigid or similarity motion
// (`[search] transform`): every candidate angle (and scale) tried by turning
// the moving view back by it and running the shift search, on a coarse
// level (block means) when the frames are large; the best candidate's shift
// searched at full resolution, then refined together with its angle (and
// scale) by refine_motion.
#pragma once
#include "../plan/stack_plan.hpp"
#include "preprocess.hpp"
#include "search_pairs.hpp"

namespace stackalign {

// A level of the search: a searcher, the views it has prepared, and the
// block size its views are binned by (1: full resolution).
struct MotionLevel {
    PairSearcher& searcher;
    PreparedViews& views;
    int bin = 1;
};

// The coarse level's block size for frames of this size (1: none), and its
// setup: the window and shift range of `fine` in binned pixels, no refinement.
int coarse_bin(int width, int height);
SearchSetup coarse_setup(const SearchSetup& fine, int bin, int width, int height);

struct MotionSearchTimes {
    double search = 0, refine = 0;
};

// Fills pr.peak (the full-resolution shift peak at the best candidate),
// pr.measured and pr.shift (reference content at X appears in the moving
// view at A (X - c) + c + d); `device`: the searchers', for the
// refinement's histograms; `coarse`: null to scan candidates at full resolution.
void search_motion_pair(const StackPlan& plan, const Device& device, const MotionLevel& fine, const MotionLevel* coarse,
                        PairResult& pr, MotionSearchTimes& times);

}  // namespace stackalign
