#include "fit_points.hpp"

#include "../../src/core/error.hpp"

namespace stackalign {

PointFit fit_points(FitKind kind, std::vector<LandmarkMatch>& matches, double voxel) {
    PointFit out;
    if (kind == FitKind::none) return out;
    std::vector<int> matched;
    std::vector<Point3> s, d;
    for (int i = 0; i < int(matches.size()); ++i)
        if (matches[i].matched()) {
            matched.push_back(i);
            s.push_back(matches[i].src);
            d.push_back(matches[i].dst);
        }
    try {
        out.fit = fit_landmarks(s, d, kind, kLeastOutlierVoxels * voxel);
        for (std::size_t k = 0; k < matched.size(); ++k)
            if (out.fit->outlier[k]) matches[matched[k]].status = "outlier";
    } catch (const FitError& e) {
        // Reported by the job once the matches are written (they stand on their own).
        out.error = e.what();
    }
    return out;
}

}  // namespace stackalign
