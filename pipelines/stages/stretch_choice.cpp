#include "stretch_choice.hpp"

#include <cmath>
#include <cstdio>

#include "refine_smoothing.hpp"

namespace stackalign {

std::vector<StackPlan> stretch_candidates(const StackPlan& plan) {
    if (!plan.stretch_auto) return {plan};
    StackPlan on = plan, off = plan;
    on.stretch = true;
    off.stretch = false;
    if (plan.solve == OffsetSolve::chain) {
        on.stretch_why = "auto: stretched (solve = \"chain\" has no skip pairs to tell the two ways apart)";
        return {on};
    }
    return {on, off};
}

double fit_residual_rms(const PairSearch& search) {
    double squares = 0;
    for (const std::vector<PairResult>* kind : {&search.pairs, &search.skips})
        for (const PairResult& p : *kind) squares += p.residual * p.residual;
    const std::size_t n = search.pairs.size() + search.skips.size();
    return n ? std::sqrt(squares / double(n)) : 0.0;
}

StopWhen losing_way_stop(const std::optional<AlignedPairs>& best, AlignedPairs& candidate) {
    if (!best) return {};
    const double first = triplet_sums(best->plan, best->search, nullptr, nullptr).rms();
    if (!(first > 0)) return {};  // no usable triplet, or none disagreeing: nothing to be far from
    candidate.stopped_against = first;
    return [first, &candidate](const PairSearch& so_far, const std::vector<bool>& pair_done,
                               const std::vector<bool>& skip_done) {
        const TripletSums sums = triplet_sums(candidate.plan, so_far, &pair_done, &skip_done);
        candidate.stopped_triplets = sums.used;
        candidate.stopped_closure = std::sqrt(sums.squares / double(so_far.skips.size()));
        return candidate.stopped_closure > kLosingMargin * first;
    };
}

AlignedPairs search_one_way(const StackPlan& way, FrameReader& frames, const std::optional<AlignedPairs>& best,
                            StageTimes& times, Verbosity verbosity) {
    AlignedPairs pairs;
    SmoothingDecision smoothing;
    if (best && way.refine_sigma_auto) {
        pairs.plan = smoothing_by_noise(way, frames, times);
        pairs.search = search_pairs(pairs.plan, frames, times, verbosity, {}, losing_way_stop(best, pairs));
        if (pairs.search.stopped) return pairs;
        smoothing = resolve_refine_smoothing(pairs.plan, frames, times, verbosity, &pairs.search);
        const bool same = smoothing.plan.setup.refine_sigma == pairs.plan.setup.refine_sigma;
        pairs.plan = std::move(smoothing.plan);  // with the trial's record
        if (same) return pairs;
    } else {
        smoothing = resolve_refine_smoothing(way, frames, times, verbosity);
        pairs.plan = std::move(smoothing.plan);
    }
    pairs.search =
        search_pairs(pairs.plan, frames, times, verbosity, {&smoothing.trial, true}, losing_way_stop(best, pairs));
    return pairs;
}

void keep_more_consistent(std::optional<AlignedPairs>& best, AlignedPairs candidate, Verbosity verbosity) {
    if (!best) {
        best = std::move(candidate);
        return;
    }
    char why[300];
    if (candidate.search.stopped) {
        std::snprintf(why, sizeof why,
                      "auto: stretched; as read stopped after %d triplet%s, whose disagreement already makes at least "
                      "%.4f px RMS, over %.0f times the stretched pairs' %.4f",
                      candidate.stopped_triplets, candidate.stopped_triplets == 1 ? "" : "s", candidate.stopped_closure,
                      kLosingMargin, candidate.stopped_against);
        best->plan.stretch_why = why;
        log_line(verbosity, std::string("cosine stretch ") + why);
        return;
    }
    const double stretched = fit_residual_rms(best->search), as_read = fit_residual_rms(candidate.search);
    const bool take = as_read * kAsReadMargin < stretched;
    if (take) best = std::move(candidate);
    std::snprintf(why, sizeof why,
                  "auto: %s, the least-squares residual %.4f px RMS as read against %.4f stretched (as read is kept "
                  "below 1/%g of the stretched)",
                  take ? "as read" : "stretched", as_read, stretched, kAsReadMargin);
    best->plan.stretch_why = why;
    log_line(verbosity, std::string("cosine stretch ") + why);
}

}  // namespace stackalign
