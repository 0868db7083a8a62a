// The stack / tilt-series job: config -> plan -> load -> preprocess ->
// search -> refine -> flag -> accumulate -> apply -> write.
#pragma once
#include <vector>

#include "../src/config/config.hpp"
#include "../src/output/frame_tables.hpp"
#include "plan/stack_plan.hpp"
#include "run_options.hpp"
#include "stages/apply.hpp"
#include "stages/judge_run.hpp"
#include "stages/search_pairs.hpp"

namespace stackalign {

struct StackResult {
    std::vector<FrameResult> frames;
    std::vector<PairResult> pairs;
    std::string backend_description;
    RunQuality quality;
};

// A job whose series the caller holds in memory (the Python module): the
// frames of `input` in place of input.stack's file (whose name still names
// the outputs), and each aligned frame handed to `aligned` where set,
// whether or not output.aligned writes the aligned stack's file too. Why:
// through files, a 127 MB array was written, read, and its aligned stack
// written and read back, 1-1.5 s on the 2-core machine (docs/benchmarks.md).
struct HeldStack {
    std::shared_ptr<const MemoryStack> input;
    AlignedFrameSink aligned;
};

StackResult run_stack(const StackPlan& plan, const RunOptions& opt, const HeldStack* held = nullptr);
StackResult run_stack(const Config& cfg, const RunOptions& opt, const HeldStack* held = nullptr);

}  // namespace stackalign
