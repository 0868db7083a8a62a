// Write stage of a landmark job: the matches in the formats of the tools
// users check them with, the fit report, and the job's run.json content.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <optional>

#include "../../kernels/refine/global_refine.hpp"
#include "fit_points.hpp"

namespace stackalign {

// matches.csv: name,src_x,src_y,src_z,dst_x,dst_y,dst_z,dx,dy,dz,mi,sharpness,status
// and, with a fit, fit_x,fit_y,fit_z (the fit applied to every source
// point, skipped ones included) and residual (|dst - fit|, matched points).
std::string matches_csv(const std::vector<LandmarkMatch>& matches, const std::optional<FitResult>& fit);

// matches.csv, matches.landmarkAscii (Amira), matches_bigwarp.csv and, with a
// fit, fit.txt.
void write_matches(const LandmarkPlan& plan, const std::vector<LandmarkMatch>& matches, const PointFit& fit);

nlohmann::ordered_json landmark_record(const LandmarkPlan& plan, const std::vector<LandmarkMatch>& matches,
                                       const PointFit& fit, const std::optional<GlobalRefineResult>& refinement,
                                       const std::string& backend, int searched,
                                       double search_seconds);

}  // namespace stackalign
