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
PointFit fit_points(FitKind kind, std::vector<LandmarkMatch>& matches);

}  // namespace stackalign
