// Refinement-smoothing stage of a stack job: with refine_sigma = "auto"
// (shifts, continuous refinement) the frames' noise is measured on a few
// kept frames (src/alignment/noise_level.hpp) before the search, whose
// features are smoothed by what it decides; where that is less than 1 px,
// a trial on the views around the reference weighs it against 1 px.
//
// Why the smoothing follows the noise: smoothing both frames alike adds no
// bias where one frame is the other moved, but where their contrast differs
// by a nonlinear map (a gamma, bands remapped) smooth(g(f)) is no longer a
// function of smooth(f), and the more smoothing, the further the refined
// shift drifts. Noise wants the opposite. Measured on the `make compare`
// cases (docs/benchmarks.md, ten seeds, mean RMS px): gain and gamma 0.0055
// at 0.65 px against 0.0179 at 1 px, bands shuffled 0.0067 against 0.0184,
// shifted 0.0018 against 0.0019; Poisson noise of 10 photons at the mean
// 0.101 at 0.65 px against 0.036 at 1 px; the best smoothing moved from
// 0.65 px at 300 photons to 0.8 at 30 and 1 at 10.
//
// Why a trial too: the noise does not see everything smoothing is for. The
// same shuffled bands on 128^2 frames (3x3 binning) wanted 1 px (mean RMS
// 0.036 against 0.096 at 0.65 px over ten seeds), and their noise reads as
// low as at 192^2. What does see it is how well the pairs agree with one
// another: a triplet's disagreement |s(i,i+1) + s(i+1,i+2) - s(i,i+2)| is
// the errors of three independent answers, and over those ten seeds it was
// 2-5x smaller at 1 px exactly where 1 px was the more precise.
#pragma once
#include "../plan/stack_plan.hpp"
#include "search_pairs.hpp"

namespace stackalign {

// The refinement's smoothing (px) for frames whose noise_to_contrast is
// `ratio`: 0.65 px up to a ratio of 0.12, then linear to kRefineSigma
// (1 px) at 0.32 and above (the measured optima above: 300 photons at the
// mean read 0.085, 30 read 0.23, 10 read 0.36).
float smoothing_for_noise(double ratio);

// Whether the trial's larger smoothing wins: its triplets' RMS disagreement
// (px) clearly below the smaller one's. "Clearly": 1 px must close at least
// 1.6x tighter (on the ten-seed cases the ratio was 0.22-0.53 where 1 px
// was more precise and 0.76-2.8 elsewhere; a trial has 7 triplets).
bool more_smoothing_wins(double closure_less, double closure_more);

// The plan with its smoothing decided, and the trial's pairs at that
// smoothing: exactly what the job's search would find for them, so it
// takes them as they are (search_pairs' `known`) rather than searching and
// refining them again. `plan` itself, and no pairs, unless it asks for
// "auto"; then setup.refine_sigma, refine_noise and refine_trial are the
// measurements'. The trial at 1 px refines the integer peaks found at the
// smaller smoothing, which smoothing does not change, and stops as soon as
// its triplets so far rule out its winning (the choice, and so the job's
// answer, is what the whole trial would give); its skips that cannot weigh
// a triplet stay unrefined, and where 1 px wins the job refines them. The
// trial's searches are added to `times`. `searched`: the whole series
// already searched at `plan`, which smoothing_by_noise made (a later way of
// stretching, searched first: search_one_way); the noise is not measured
// again, and the trial takes that search's pairs for its smaller smoothing.
struct SmoothingDecision {
    StackPlan plan;
    PairSearch trial;  // empty without a trial
};
SmoothingDecision resolve_refine_smoothing(const StackPlan& plan, FrameReader& frames, StageTimes& times,
                                           Verbosity verbosity, const PairSearch* searched = nullptr);

// The plan at the smoothing the frames' noise gives (setup.refine_sigma and
// refine_noise set; no trial), or `plan` where it asks for none.
StackPlan smoothing_by_noise(const StackPlan& plan, FrameReader& frames, StageTimes& times);

}  // namespace stackalign
