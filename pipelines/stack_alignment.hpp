// The stack / tilt-series job, end to end:
// config -> load -> preprocess -> search -> accumulate -> apply -> write.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "../kernels/pair_searcher.hpp"
#include "../src/config/config.hpp"
#include "../src/output/output_files.hpp"
#include "../src/core/progress.hpp"
#include "../src/io/stack_io.hpp"
#include "run_options.hpp"

namespace stackalign {

// What `check` reports and `run` follows.
struct StackPlan {
    std::vector<std::string> files;      // input files, in frame order
    StackInfo input;                     // format, size, type, pixel size of the input
    int frames = 0, width = 0, height = 0;
    PixelType type = PixelType::u8;
    std::vector<double> angles;          // per frame, degrees; empty: not a tilt series
    std::vector<bool> excluded;          // per frame
    std::vector<int> kept;               // the views that are searched, ascending
    int reference = 0;
    std::string reference_why;           // how the reference was chosen
    bool stretch = false;                // cosine stretching of pairs
    std::string output_format;           // "tiff" | "mrc"
    std::string name;                    // stem for IMOD files (name.prexf, name.prexg)
    SearchSetup setup;
    Backend backend = Backend::cpu;
};

// Validates the config against the input without reading pixel data.
StackPlan plan_stack(const Config& cfg, const RunOptions& opt);
std::string describe_plan(const Config& cfg, const StackPlan& plan);

// One searched pair of neighbouring kept views.
struct PairResult {
    int ref = 0, mov = 0;                // view indices (mov > ref; views between are excluded)
    MiPeak peak;
    Shift measured;                      // content offset of mov relative to ref, as searched (subpixel)
    Shift shift;                         // the same in the unstretched views, after any interpolation
    double stretch = 1;                  // cosine stretch factor applied to the higher-tilt view
    bool weak = false, outlier = false, interpolated = false;
    double z = 0;                        // robust z-score of shift / (mov - ref)
};

struct StackResult {
    std::vector<FrameResult> frames;
    std::vector<PairResult> pairs;
    std::string backend_description;
};

StackResult run_stack(const Config& cfg, const RunOptions& opt);

}  // namespace stackalign
