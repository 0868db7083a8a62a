// cosine_stretch = "auto" on a series within a slab's tilt range: whether
// the slab model fits is the data's to say, for the whole series at once.
// Stretching some pairs and not others mixes two geometries in one
// least-squares fit (the skip pairs then disagree with their neighbours by
// the model's error): on the slab series of `python3 bench/tilt_accuracy.py`
// the per-pair choice by the sharper peak gave 0.76 px gauge-free against
// 0.31 stretched and 0.38 as read. So the pairs are aligned both ways, and
// the way whose least-squares fit leaves the smaller residual (pairs and
// skips, RMS) is kept, the stretch unless the views as read fit clearly
// better (kAsReadMargin): the skips are independent evidence of their
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
    // A way stopped as losing (search.stopped): its triplets done when it
    // stopped, the disagreement they already gave, and the first way's
    // triplet RMS it was held against (losing_way_stop).
    int stopped_triplets = 0;
    double stopped_closure = 0, stopped_against = 0;
};

// The plans the pairs are aligned with: the plan itself, or for "auto" the
// plan stretched, then as read (with solve = "chain", which has no skip
// pairs to compare them by, stretched alone, as IMOD's tiltxcorr does).
std::vector<StackPlan> stretch_candidates(const StackPlan& plan);

// RMS of the least-squares residuals of the pairs and skips.
double fit_residual_rms(const PairSearch& search);

// The second way's search stops once it cannot come near the first: the
// squared disagreements of its triplets done so far, over every triplet it
// could have, already give an RMS more than kLosingMargin times the first
// way's (each triplet still to come only adds its square). The fits'
// residuals that decide follow the triplets' disagreements; a margin that
// wide leaves no series near the line to the rule. On the acquisition-size
// series of `bench stages` (61 x 4096^2, a flat specimen) as read left a
// residual of 1.37 px RMS, and its pass was 3.8 s of the 13.6 s job on the
// H200 (9.8 s stretched alone). With the stop, the 256-px slab of
// `python3 bench/tilt_accuracy.py` took 3.5 s instead of 4.25 on 2 cores,
// the same offsets to the last digit. Nothing (no stop) for the first way.
StopWhen losing_way_stop(const std::optional<AlignedPairs>& best, AlignedPairs& candidate);
constexpr double kLosingMargin = 3.0;

// The pairs of one way searched at its refinement smoothing (search_pairs,
// refine_smoothing.hpp), not yet weighed, flagged or solved. The first way
// (`best` empty) has its smoothing decided first and takes its trial's
// pairs. A later way is searched first at the smoothing the noise gives,
// under losing_way_stop: its own smoothing trial (on the 61 x 4096^2
// acquisition series of `bench stages`, 0.79 s of an 8.5 s job, before the
// way stopped after one triplet) is made only where it runs to the end,
// with that search's pairs as the trial's smaller smoothing, and where the
// larger one wins the way is searched again at it. Where it runs to the
// end its answer is the one the trial first would give; where it stops, it
// stops at the noise's smoothing, which the trial keeps unless 1 px closes
// 1.6x tighter: the stop needs 3x the first way's disagreement.
AlignedPairs search_one_way(const StackPlan& way, FrameReader& frames, const std::optional<AlignedPairs>& best,
                            StageTimes& times, Verbosity verbosity);

// `candidate` becomes `best` where there is none yet or, for the way as
// read against the stretched one, where its residual is under the
// stretched way's over kAsReadMargin (a stopped one never); with "auto",
// the kept plan's stretch_why says why, and the log.
void keep_more_consistent(std::optional<AlignedPairs>& best, AlignedPairs candidate, Verbosity verbosity);
// Within a slab's range the stretch is the geometry's own model, so the
// views as read must fit clearly better to be kept: a needle seen over
// +-60 degrees does (the sample HAADF series, tests/test_tilt_series.cpp:
// 0.0020 px RMS as read against 0.3665 stretched), but a slab whose content
// sits at two depths far apart can fit a little better as read and be far
// worse: the two flat layers of `python3 bench/tilt_accuracy.py --size 512
// --cases slab-layers2` (1000 photons, seed 7) left 0.0674 px as read
// against 0.0989 stretched, and were 0.287 px from the truth as read
// against 0.062 stretched. Every other case of that bench, at 256 and 512
// px, stopped the way as read early (kLosingMargin) and kept the stretch.
constexpr double kAsReadMargin = 2.0;

}  // namespace stackalign
