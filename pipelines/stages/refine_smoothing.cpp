#include "refine_smoothing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../../src/alignment/noise_level.hpp"
#include "../../src/alignment/solve_offsets.hpp"
#include "../../src/core/workers.hpp"
#include "search_pairs.hpp"

namespace stackalign {
namespace {

// Frames measured: spread over the series, few enough that the pass costs
// a few milliseconds (a 256 x 256 crop of each).
constexpr int kNoiseFrames = 8;

// The trial's views: 8 neighbour pairs and 7 triplets, each searched and
// refined once per smoothing (on a 121-view series, 30 pairs beside the
// job's 239).
constexpr int kTrialViews = 9;

// The kept views around the reference, searched and refined at `sigma`
// (`known`: the same views' integer peaks, from the trial at the other
// smoothing, which this one does not change).
PairSearch trial_search(const StackPlan& plan, float sigma, FrameReader& frames, StageTimes& times,
                        const KnownPairs& known, const StopWhen& stop_when = {}) {
    StackPlan trial = plan;
    const int kept = int(plan.kept.size()), n = std::min(kept, kTrialViews);
    const int first = std::clamp(plan.kept_reference() - n / 2, 0, kept - n);
    trial.kept.assign(plan.kept.begin() + first, plan.kept.begin() + first + n);
    trial.solve = OffsetSolve::least_squares;  // the skips are the measurement, whatever the job solves
    trial.setup.refine_sigma = sigma;
    return search_pairs(trial, frames, times, Verbosity::quiet, known, stop_when);
}

}  // namespace

float smoothing_for_noise(double ratio) {
    constexpr double clean = 0.12, noisy = 0.32, least = kRefineSigmaClean;
    const double t = std::clamp((ratio - clean) / (noisy - clean), 0.0, 1.0);
    return float(least + t * (double(kRefineSigma) - least));
}

bool more_smoothing_wins(double closure_less, double closure_more) {
    constexpr double margin = 1.6;
    return closure_more * margin < closure_less;  // false where either is NaN
}

StackPlan smoothing_by_noise(const StackPlan& plan, FrameReader& frames, StageTimes& times) {
    if (!plan.refine_sigma_auto) return plan;
    const int kept = int(plan.kept.size()), n = std::min(kept, kNoiseFrames);
    const auto started = Clock::now();
    // The frames read and measured at once, each on a thread: one after
    // another they took 18-30 ms of a 512^2 or 1024^2 series on the H100
    // host, before a GPU job's first search. A frame that cannot be read
    // stops the job with the first such frame's error, as in turn.
    std::vector<double> ratios(n);
    run_tasks(n, [&](int i) {
        ratios[i] = noise_to_contrast(*frames.read(plan.kept[std::size_t(i) * (kept - 1) / std::max(n - 1, 1)]));
    });
    StackPlan out = plan;
    out.refine_noise = series_noise(ratios);
    out.setup.refine_sigma = smoothing_for_noise(out.refine_noise);
    times.preprocess += seconds_since(started);
    return out;
}

SmoothingDecision resolve_refine_smoothing(const StackPlan& plan, FrameReader& frames, StageTimes& times,
                                           Verbosity verbosity, const PairSearch* searched) {
    if (!plan.refine_sigma_auto) return {plan, {}};
    const int kept = int(plan.kept.size()), n = std::min(kept, kNoiseFrames);
    SmoothingDecision decided{searched ? plan : smoothing_by_noise(plan, frames, times), {}};
    StackPlan& out = decided.plan;
    const float by_noise = out.setup.refine_sigma;
    char line[480];
    std::snprintf(line, sizeof line,
                  "refinement smoothing: %.2f px (noise %.3f of the frames' contrast, the least of %d frames)", by_noise,
                  out.refine_noise, n);
    // Two skips at least, so that one odd triplet cannot decide alone.
    if (by_noise < kRefineSigma && kept >= 4) {
        StackPlan::SmoothingTrial trial;
        trial.views = std::min(kept, kTrialViews);
        trial.less = by_noise;
        trial.more = kRefineSigma;
        // One after the other, the second taking the first's peaks. Side by
        // side on the GPU (the 1 px trial finding the same peaks itself) the
        // first took as much longer as the second had taken: tilt series
        // 0.356 s against 0.335 (medians of ten, H100, `bench stages tilt`).
        auto t = Clock::now();
        PairSearch less = trial_search(plan, trial.less, frames, times, {searched, true});
        trial.seconds_less = seconds_since(t);
        trial.closure_less = triplet_sums(plan, less, nullptr, nullptr).rms();
        // The 1 px search stops as soon as it cannot win, and is not made
        // where nothing could (no usable triplet at the smaller smoothing,
        // or none disagreeing): the job takes the smaller smoothing's pairs
        // either way. Cannot win: the squares of the triplets done so far,
        // divided by every triplet the trial could have, already give an
        // RMS that is not clearly smaller. Each triplet still to come only
        // adds its square (in the same order, so in floating point too),
        // and fewer usable ones only divide by less. A skip whose peak
        // cannot weigh its triplet is not refined at all: on the sample
        // time-lapse's 9 views, 5 of the 7, a third of the 1 px search.
        PairSearch more_found;
        t = Clock::now();
        if (more_smoothing_wins(trial.closure_less, 0.0)) {
            more_found = trial_search(
                plan, trial.more, frames, times, {&less, false, true},
                [&](const PairSearch& so_far, const std::vector<bool>& pair_done, const std::vector<bool>& skip_done) {
                    const TripletSums sums = triplet_sums(plan, so_far, &pair_done, &skip_done);
                    trial.triplets_more = sums.used;
                    trial.closure_more = std::sqrt(sums.squares / double(so_far.skips.size()));
                    return !more_smoothing_wins(trial.closure_less, trial.closure_more);
                });
            trial.more_stopped = more_found.stopped;
            if (!more_found.stopped) {
                const TripletSums all = triplet_sums(plan, more_found, nullptr, nullptr);
                trial.closure_more = all.rms();
                trial.triplets_more = all.used;
            }
        } else {
            trial.more_stopped = true;
            trial.closure_more = std::nan("");
        }
        trial.seconds_more = seconds_since(t);
        const bool more = !trial.more_stopped && more_smoothing_wins(trial.closure_less, trial.closure_more);
        if (more) out.setup.refine_sigma = trial.more;
        decided.trial = std::move(more ? more_found : less);
        out.refine_trial = trial;
        out.refine_sigma_why = "auto: the frames' noise, then a trial of the pairs' agreement";
        char at_more[160];
        if (!trial.more_stopped)
            std::snprintf(at_more, sizeof at_more, "%.3g px at %.2f px", trial.closure_more, trial.more);
        else if (std::isfinite(trial.closure_more))
            std::snprintf(at_more, sizeof at_more, "at least %.3g px at %.2f px (stopped after %d triplet%s: it could not win)",
                          trial.closure_more, trial.more, trial.triplets_more, trial.triplets_more == 1 ? "" : "s");
        else
            std::snprintf(at_more, sizeof at_more, "%.2f px not tried (nothing to improve on)", trial.more);
        std::snprintf(line, sizeof line,
                      "refinement smoothing: %.2f px (noise %.3f of the frames' contrast, the least of %d frames, gives "
                      "%.2f px; on the %d views around the reference the triplets disagree by %.3g px RMS at %.2f px "
                      "and %s)",
                      out.setup.refine_sigma, out.refine_noise, n, by_noise, trial.views, trial.closure_less,
                      trial.less, at_more);
    }
    log_line(verbosity, line);
    return decided;
}

}  // namespace stackalign
