#include "file_order.hpp"

namespace stackalign {

InFileOrder in_file_order(const StackPlan& plan, const std::vector<FrameResult>& results, const FrameReader& frames) {
    InFileOrder out{plan, results, frames.in_order({})};
    const std::vector<int>& order = plan.view_order;
    if (order.empty()) return out;
    StackPlan& p = out.plan;
    p.view_order.clear();
    p.kept.clear();
    for (std::size_t v = 0; v < order.size(); ++v) {
        out.results[order[v]] = results[v];
        p.angles[order[v]] = plan.angles[v];
        p.excluded[order[v]] = plan.excluded[v];
    }
    for (int f = 0; f < p.frames; ++f)
        if (!p.excluded[f]) p.kept.push_back(f);
    p.reference = order[plan.reference];
    return out;
}

}  // namespace stackalign
