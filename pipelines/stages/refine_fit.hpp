// Global refinement stage of a landmark job (`[landmarks] refine =
// "global"`): the fit refined by MI over the whole overlap of the volumes
// (kernels/refine/global_refine.hpp); the fit's matrix, residuals and RMS
// are replaced by the refined transform's.
#pragma once
#include <string>

#include "../../kernels/refine/global_refine.hpp"
#include "fit_points.hpp"

namespace stackalign {

struct GlobalRefinement {
    GlobalRefineResult result;
    long long samples = 0;  // reference voxels scored per transform
    int step = 1;           // their spacing along each axis, voxels
};

// `searcher`: the matching's, holding the source in slot 0 and the target
// in slot 1; its refinement features are used when it kept them.
GlobalRefinement refine_fit_globally(const LandmarkPlan& plan, const RawFrame& source, const RawFrame& target,
                                     const PairSearcher& searcher, const std::vector<LandmarkMatch>& matches,
                                     FitResult& fit);

}  // namespace stackalign
