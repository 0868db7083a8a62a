// The search of one neighbour pair for a rigid or similarity motion
// (`[search] transform`): every candidate angle (and scale) tried by turning
// the moving view back by it and running the shift search, on a coarse
// level (block means) when the frames are large; the best candidate searched
// again at full resolution with its two neighbouring angles (these only near
// its peak, search_fine_angles), the best of them refined together with its
// angle (and scale) by refine_motion.
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

// refine_metric = "auto": how a pair whose values correlate by r was
// refined (auto_refine_params' metric and sign), and its name: "ncc",
// "ncc (inverted)" or the setup's metric.
RefineParams auto_refinement(const SearchSetup& setup, double r);
std::string auto_refined_with(const SearchSetup& setup, double r);

struct MotionSearchTimes {
    double search = 0, refine = 0;
};

// Fills pr.peak (the full-resolution shift peak at the best candidate),
// pr.measured and pr.shift (reference content at X appears in the moving
// view at A (X - c) + c + d), the refinement's histograms made by `fine`'s
// searcher from its slots' features; `coarse`: null to scan candidates at
// full resolution.
void search_motion_pair(const StackPlan& plan, const MotionLevel& fine, const MotionLevel* coarse,
                        PairResult& pr, MotionSearchTimes& times);

// A skip pair of the least-squares solve (views i, i+2): the moving view
// turned back by `predicted`'s angle and scale (its two neighbour pairs
// composed), the shift searched about the prediction's (a wrong neighbour
// then shows as a skip that disagrees, as for translations: off_prediction
// when the peak is at the range's edge; where the centred range would leave
// the frame, the turned view is moved there by whole pixels), then refined
// with its angle and scale as a neighbour pair is. Fills what
// search_motion_pair fills.
void search_motion_skip(const StackPlan& plan, const MotionLevel& fine, const Transform& predicted,
                        PairResult& pr, MotionSearchTimes& times);

}  // namespace stackalign
