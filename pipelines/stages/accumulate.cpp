#include "accumulate.hpp"

#include <cmath>

#include "../../src/alignment/accumulate.hpp"
#include "flag_pairs.hpp"

namespace stackalign {

std::vector<FrameResult> accumulate_frames(const StackPlan& plan, const std::vector<PairResult>& pairs) {
    std::vector<Transform> chain;
    for (const PairResult& p : pairs) chain.push_back(p.shift);
    const std::vector<Transform> offsets = chain_offsets(plan.frames, plan.kept, chain, plan.reference);
    const double nan = std::nan("");
    std::vector<FrameResult> frames(plan.frames);
    for (int k = 0; k < plan.frames; ++k) {
        FrameResult& f = frames[k];
        f.offset = offsets[k];
        f.tilt = plan.angles.empty() ? nan : plan.angles[k];
        f.neighbour = plan.excluded[k] ? Transform::translation(nan, nan) : Transform{};
        f.mi = f.sharpness = nan;
        f.status = plan.excluded[k] ? "excluded (interpolated)" : k == plan.reference ? "reference" : "ok";
    }
    for (const PairResult& p : pairs) {
        FrameResult& f = frames[p.mov];
        f.neighbour = p.shift;
        f.mi = p.peak.mi;
        f.sharpness = p.peak.sharpness();
        if (p.weak || p.outlier) f.status = (p.mov == plan.reference ? "reference; " : "") + pair_status(p);
    }
    return frames;
}

}  // namespace stackalign
