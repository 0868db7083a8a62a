#include "refine_fit.hpp"

#include <cmath>
#include <sstream>

namespace stackalign {

GlobalRefinement refine_fit_globally(const LandmarkPlan& plan, const RawFrame& source, const RawFrame& target,
                                     const PairSearcher& searcher, const std::vector<LandmarkMatch>& matches,
                                     FitResult& fit) {
    // The source is the reference (its voxels are sampled), the target is
    // interpolated: the fit already maps source to target. The features are
    // the matching's (intensities, landmark_plan) unless it made none.
    RefineFeatures own[2];
    const RefineFeatures* slot[2] = {searcher.features(0), searcher.features(1)};
    const RawFrame* volume[2] = {&source, &target};
    for (int k = 0; k < 2; ++k)
        if (!slot[k]) slot[k] = &(own[k] = refine_features(*volume[k], RefineOn::intensity, plan.setup.preprocess));
    const RefineFeatures &ref = *slot[0], &mov = *slot[1];
    const RefineParams p = refine_params(ref, mov, SearchWindow{0, 0, 0, source.width, source.height, source.depth},
                                         IntShift{}, ShiftRange{0, 0, 0}, Metric::mi);
    GlobalRefinement out;
    // Every voxel up to about a million, then every step-th: on the rotated
    // zebrafish volume (0.47 M voxels) every voxel gave 0.032 voxel RMS at
    // the points, every 2nd (68 k) 0.073 and every 3rd 0.089, where the fit
    // alone gave 0.064: MI from fewer samples is too noisy at this scale.
    const double voxels = double(source.width) * source.height * source.depth;
    out.step = std::max(1, int(std::ceil(std::cbrt(voxels / 1.0e6) - 1e-9)));
    // Samples stay clear of the faces by the smoothing's reach (3 sigma)
    // plus the cubic B-spline's (1 voxel); see SampleGrid.
    const int margin = int(std::ceil(3 * kRefineSigma)) + 1;
    const SampleGrid grid{source.width, source.height, source.depth, out.step, margin};
    out.samples = grid.count();
    const auto statistics = make_affine_statistics(ref, mov, p, grid, plan.device);
    out.result = refine_transform(fit.m, fit.kind == FitKind::rigid, plan.voxel_size.value_or(std::array<double, 3>{1, 1, 1}),
                                  {source.width, source.height, source.depth}, p, *statistics);
    fit.m = out.result.m;
    // The matched points, in the order the fit saw them (fit_points).
    std::vector<Point3> src, dst;
    for (const LandmarkMatch& m : matches)
        if (m.matched()) src.push_back(m.src), dst.push_back(m.dst);
    measure_residuals(fit, src, dst);
    std::ostringstream note;
    note.precision(4);
    note << "refined globally (MI over the volumes' overlap, " << out.samples << " source voxels every " << out.step
         << "): MI " << out.result.mi_start << " -> " << out.result.mi_end << " nats in " << out.result.batches
         << " batches of transforms";
    fit.note = note.str();
    return out;
}

}  // namespace stackalign
