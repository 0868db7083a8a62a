// The landmark job: config -> plan -> load both volumes -> preprocess in 3D
// -> search each point's window -> refine -> fit -> write.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "../src/config/config.hpp"
#include "plan/landmark_plan.hpp"
#include "run_options.hpp"
#include "stages/fit_points.hpp"
#include "stages/write_matches.hpp"

namespace stackalign {

struct LandmarkResult {
    std::vector<LandmarkMatch> matches;
    PointFit fit;
    std::optional<GlobalRefineResult> refinement;  // refine = "global"
    std::string backend_description;
};

// `held`: the volumes the caller holds in memory (plan_landmarks' `held`),
// read from no file.
LandmarkResult run_landmarks(const LandmarkPlan& plan, const RunOptions& opt, const HeldLandmarks* held = nullptr);
LandmarkResult run_landmarks(const Config& cfg, const RunOptions& opt, const HeldLandmarks* held = nullptr);

}  // namespace stackalign
