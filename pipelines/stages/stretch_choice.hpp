// cosine_stretch = "auto" on a series within a slab's tilt range: whether
// the slab model fits is the data's to say, for the whole series at once.
// Stretching some pairs and not others mixes two geometries in one
// least-squares fit (the skip pairs then disagree with their neighbours by
// the model's error): on the slab series of `python3 bench/tilt_accuracy.py`
// the per-pair choice by the sharper peak gave 0.76 px gauge-free against
// 0.31 stretched and 0.38 as read. So the pairs are aligned both ways, and
// the way whose least-squares fit leaves the smaller residual (pairs and
// skips, RMS) is kept: the skips are independent evidence of their
// neighbour pairs, and on those series the residual ranked the two ways as
// the truth did. Twice the pair stage's work, for the precision.
#pragma once
#include <optional>
#include <vector>

#include "../plan/stack_plan.hpp"
#include "accumulate.hpp"
#include "search_pairs.hpp"

namespace stackalign {

// The pairs of a series aligned one way: searched, refined, flagged, solved.
struct AlignedPairs {
    StackPlan plan;
    PairSearch search;
    std::vector<FrameResult> results;
};

// The plans the pairs are aligned with: the plan itself, or for "auto" the
// plan stretched, then as read (with solve = "chain", which has no skip
// pairs to compare them by, stretched alone, as IMOD's tiltxcorr does).
std::vector<StackPlan> stretch_candidates(const StackPlan& plan);

// RMS of the least-squares residuals of the pairs and skips.
double fit_residual_rms(const PairSearch& search);

// `candidate` becomes `best` where there is none yet or its residual is
// smaller; with "auto", the kept plan's stretch_why says why, and the log.
void keep_more_consistent(std::optional<AlignedPairs>& best, AlignedPairs candidate, Verbosity verbosity);

}  // namespace stackalign
