// The stack / tilt-series job: config -> plan -> load -> preprocess ->
// search -> refine -> flag -> accumulate -> apply -> write.
#pragma once
#include <vector>

#include "../src/config/config.hpp"
#include "../src/output/frame_tables.hpp"
#include "plan/stack_plan.hpp"
#include "run_options.hpp"
#include "stages/search_pairs.hpp"

namespace stackalign {

struct StackResult {
    std::vector<FrameResult> frames;
    std::vector<PairResult> pairs;
    std::string backend_description;
};

StackResult run_stack(const StackPlan& plan, const RunOptions& opt);
StackResult run_stack(const Config& cfg, const RunOptions& opt);

}  // namespace stackalign
