// Fit stage of a landmark job: a rigid or affine transform fitted to the
// matched points with outlier rejection; rejected matches become "outlier".
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "match_points.hpp"

namespace stackalign {

struct PointFit {
    std::optional<FitResult> fit;
    std::string error;                   // why a requested fit could not be made
};

// A fit that cannot be made leaves `fit` empty and says why in `error`.
// `voxel`: one voxel in the points' units; a match within kLeastOutlierVoxels
// of the fit is never its outlier.
PointFit fit_points(FitKind kind, std::vector<LandmarkMatch>& matches, double voxel = 1.0);
// Raw matches of the real zebrafish volume turned and moved lie 0.1 voxel
// (median) and 0.35 (90th percentile) from the truth (bench/landmark_raw.py);
// without a floor, the 3-sigma rule marked 38 of 100 right matches outliers
// where the fit left 0.0002 voxel RMS (`build/bench landmarks`).
constexpr double kLeastOutlierVoxels = 0.5;

}  // namespace stackalign
