// Search + refine stages of a landmark job: each point's window searched in
// the target volume (many points per call, so the GPU fills up), its peak
// refined to a subvoxel position.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "../plan/landmark_plan.hpp"

namespace stackalign {

struct LandmarkMatch {
    std::string name;
    Point3 src{}, dst{};                 // file units; dst valid when matched()
    std::array<int, 3> peak{};           // the winning integer shift, voxels
    std::array<int, 3> window_moved{};   // the window's offset from centred (place_window), voxels
    double mi = 0, sharpness = 0;
    std::string status;                  // "ok" | "outlier" | "skipped: why"
    bool matched() const { return status == "ok" || status == "outlier"; }
};

// The searcher holds the preprocessed source in slot 0, the target in slot 1.
std::vector<LandmarkMatch> match_points(const LandmarkPlan& plan, PairSearcher& searcher, std::string& backend_description,
                                        Verbosity verbosity);

}  // namespace stackalign
