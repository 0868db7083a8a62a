// The stack / tilt-series job, end to end:
// config -> load -> preprocess -> search -> accumulate -> apply -> write.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "../kernels/pair_searcher.hpp"
#include "../src/config.hpp"
#include "../src/output_files.hpp"
#include "../src/progress.hpp"
#include "run_options.hpp"

namespace stackalign {

// What `check` reports and `run` follows.
struct StackPlan {
    std::vector<std::string> files;      // input files, in frame order
    int frames = 0, width = 0, height = 0;
    PixelType type = PixelType::u8;
    int reference = 0;
    SearchSetup setup;
    Backend backend = Backend::cpu;
};

// Validates the config against the input without reading pixel data.
StackPlan plan_stack(const Config& cfg, const RunOptions& opt);
std::string describe_plan(const Config& cfg, const StackPlan& plan);

struct StackResult {
    std::vector<FrameResult> frames;
    std::vector<MiPeak> pairs;
    std::string backend_description;
};

StackResult run_stack(const Config& cfg, const RunOptions& opt);

}  // namespace stackalign
