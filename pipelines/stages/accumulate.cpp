#include "accumulate.hpp"

#include <cmath>

#include "../../src/alignment/accumulate.hpp"
#include "../../src/alignment/solve_offsets.hpp"
#include "flag_pairs.hpp"

namespace stackalign {

namespace {

// Least squares over the neighbour pairs and the skip pairs that agree with
// their two neighbours within unreliable_px: a consistent skip averages
// their small errors; a disagreeing one is left out (its pairs are flagged
// instead), so one wrong answer is never spread over the others. With
// on_outlier = "interpolate" flagged pairs carry their interpolated shift
// and skips over them are left out too.
std::vector<Transform> solved_offsets(const StackPlan& plan, PairSearch& search) {
    std::vector<TransformConstraint> constraints;
    const int n = int(search.pairs.size());
    for (int i = 0; i < n; ++i) constraints.push_back({i, i + 1, search.pairs[i].shift, 1.0});
    const bool drop_flagged = plan.flags.on_outlier == OnOutlier::interpolate;
    auto flagged = [](const PairResult& p) { return p.weak || p.outlier || p.unreliable; };
    for (int i = 0; i < int(search.skips.size()); ++i) {
        // (Flagged neighbours are the only ones interpolation changes, and
        // with it their skips are left out: the disagreement flag_pairs
        // measured still holds for every skip used.)
        const PairResult& skip = search.skips[i];
        const bool usable = !skip.weak && skip.disagreement <= plan.flags.unreliable_px &&
                            !(drop_flagged && (flagged(search.pairs[i]) || flagged(search.pairs[i + 1])));
        constraints.push_back({i, i + 2, search.skips[i].shift, usable ? 1.0 : 0.0});
    }
    std::vector<double> residuals;
    std::vector<Transform> t;
    const int views = int(plan.kept.size()), reference = plan.kept_reference();
    if (plan.motion.translation_only()) {
        std::vector<PairConstraint> shifts;
        for (const TransformConstraint& c : constraints) shifts.push_back({c.from, c.to, c.transform.offset(), c.weight});
        for (const Shift& s : solve_offsets(views, reference, shifts, &residuals)) t.push_back(Transform::translation(s));
    } else {
        t = solve_transforms(views, reference, constraints, &residuals);
    }
    for (int i = 0; i < n; ++i) search.pairs[i].residual = residuals[i];
    for (int i = 0; i < int(search.skips.size()); ++i) search.skips[i].residual = residuals[n + i];
    return spread_to_views(plan.frames, plan.kept, t);
}

}  // namespace

std::vector<FrameResult> accumulate_frames(const StackPlan& plan, PairSearch& search) {
    const std::vector<PairResult>& pairs = search.pairs;
    std::vector<Transform> offsets;
    if (!search.skips.empty()) {
        offsets = solved_offsets(plan, search);
    } else {
        std::vector<Transform> chain;
        for (const PairResult& p : pairs) chain.push_back(p.shift);
        offsets = chain_offsets(plan.frames, plan.kept, chain, plan.reference);
    }
    const double nan = std::nan("");
    std::vector<FrameResult> frames(plan.frames);
    for (int k = 0; k < plan.frames; ++k) {
        FrameResult& f = frames[k];
        f.offset = offsets[k];
        f.tilt = plan.angles.empty() ? nan : plan.angles[k];
        f.neighbour = plan.excluded[k] ? Transform::translation(nan, nan) : Transform{};
        f.mi = f.sharpness = f.confidence = nan;
        f.status = plan.excluded[k] ? "excluded (interpolated)" : k == plan.reference ? "reference" : "ok";
    }
    for (const PairResult& p : pairs) {
        FrameResult& f = frames[p.mov];
        f.neighbour = p.shift;
        f.mi = p.peak.mi;
        f.sharpness = p.peak.sharpness();
        f.confidence = p.confidence;
        if (p.weak || p.unsure || p.outlier) f.status = (p.mov == plan.reference ? "reference; " : "") + pair_status(p);
    }
    return frames;
}

void place_excluded_views(const StackPlan& plan, std::vector<FrameResult>& results) {
    std::vector<Transform> at_kept;
    for (int v : plan.kept) at_kept.push_back(results[v].offset);
    const std::vector<Transform> all = spread_to_views(plan.frames, plan.kept, at_kept);
    for (int v = 0; v < plan.frames; ++v)
        if (plan.excluded[v]) results[v].offset = all[v];
}

}  // namespace stackalign
