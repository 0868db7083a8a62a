// Search + refine stages of a landmark job: each point's window searched in
// the target volume (many points per call, so the GPU fills up), its peak
// refined to a subvoxel position.
#pragma once
#include <cmath>
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
    // 1 - null / mi, null the window's best MI against the target turned by
    // 180 degrees (pair_confidence.hpp's null, for volumes: inverted through
    // the volume's centre); NaN where not measured.
    double null_mi = std::nan(""), confidence = std::nan("");
    // "ok" | "ambiguous" (confidence below min_confidence; still fitted, so
    // the fit's outlier test judges it) | "outlier" | "skipped: why"
    std::string status;
    bool matched() const { return status == "ok" || status == "ambiguous" || status == "outlier"; }
};

// The searcher holds the preprocessed source in slot 0, the target in slot 1
// and, where plan.min_confidence > 0, the target turned (turned_half_way)
// in kNullSlot.
constexpr int kNullSlot = 2;
std::vector<LandmarkMatch> match_points(const LandmarkPlan& plan, PairSearcher& searcher, std::string& backend_description,
                                        Verbosity verbosity);

}  // namespace stackalign
