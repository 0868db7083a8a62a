// The operations' entry points: each sends the call to its CPU or CUDA twin.
#include "axis_grid/axis_grid.hpp"
#include "mi_search/mi_search.hpp"
#include "mtb/mtb_projection.hpp"
#include "pair_searcher.hpp"
#include "preprocess/preprocess.hpp"
#include "refine/global_refine.hpp"
#include "refine/refine.hpp"
#include "tomo/tomo.hpp"
#include "tracks/patch_tracks.hpp"
#include "view_correlation/view_correlation.hpp"

namespace stackalign {

BinImage preprocess(const RawFrame& frame, const PreprocessParams& params, const Device& device) {
    return device.backend == Backend::cuda ? cuda::preprocess(frame, params, device.gpu) : cpu::preprocess(frame, params);
}

MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, HistogramStrategy strategy,
                 const Device& device) {
    if (device.backend == Backend::cuda) return cuda::mi_search(ref, mov, p, strategy, device.gpu);
    return cpu::mi_search(ref, mov, sampled_as(p, strategy));
}

MtbProjections mtb_projections(const RawFrame& frame, const MtbParams& p, const Device& device) {
    return device.backend == Backend::cuda ? cuda::mtb_projections(frame, p, device.gpu) : cpu::mtb_projections(frame, p);
}

std::vector<std::uint64_t> refine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                             const RefineParams& p, const std::vector<ContinuousShift>& shifts,
                                             const Device& device) {
    if (device.backend == Backend::cuda) return cuda::refine_statistics(ref, mov, p, shifts, device.gpu);
    return cpu::refine_statistics(ref, mov, p, shifts);
}

std::unique_ptr<AffineStatistics> make_affine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                                         const RefineParams& p, const SampleGrid& grid,
                                                         const Device& device) {
    if (device.backend == Backend::cuda) return cuda::make_affine_statistics(ref, mov, p, grid, device.gpu);
    return cpu::make_affine_statistics(ref, mov, p, grid);
}

Reprojection reproject_leave_one_out(const std::vector<float>& views, const TomoGeometry& g, const Device& device,
                                     TomoOutputs keep) {
    if (device.backend == Backend::cuda) return cuda::reproject_leave_one_out(views, g, device.gpu, keep);
    return cpu::reproject_leave_one_out(views, g, keep);
}

void sample_on_axis_grid(const RawFrame& frame, const Transform& offset, const AxisGrid& grid, float* out,
                         const Device& device) {
    if (device.backend == Backend::cuda) return cuda::sample_on_axis_grid(frame, offset, grid, out, device.gpu);
    cpu::sample_on_axis_grid(frame, offset, grid, out);
}

PatchTracks track_patches(const std::vector<ImageF>& views, const std::vector<double>& tilts, int reference,
                          bool slab, const Device& device) {
    if (device.backend == Backend::cuda) return cuda::track_patches(views, tilts, reference, slab, device.gpu);
    return cpu::track_patches(views, tilts, reference, slab);
}

std::unique_ptr<ViewCorrelator> make_view_correlator(const std::vector<std::vector<float>>& views, int width,
                                                     int height, int max_lag, const Device& device) {
    if (device.backend == Backend::cuda) return cuda::make_view_correlator(views, width, height, max_lag, device.gpu);
    return cpu::make_view_correlator(views, width, height, max_lag);
}

std::unique_ptr<PairSearcher> make_pair_searcher(const Device& device, const SearchSetup& setup,
                                                 SearcherPriority priority) {
    return device.backend == Backend::cuda ? cuda::make_pair_searcher(setup, device.gpu, priority)
                                           : cpu::make_pair_searcher(setup);
}

}  // namespace stackalign
