// Linked only into builds made without nvcc (CUDA=0 or no toolkit found):
// the GPU twins of every operation, each saying why the GPU cannot be used.
#include "../src/core/error.hpp"
#include "apply/frame_mover.hpp"
#include "axis_grid/axis_grid.hpp"
#include "cuda_api.hpp"
#include "mi_search/mi_search.hpp"
#include "mtb/mtb_projection.hpp"
#include "least_squares/least_squares_gpu.hpp"
#include "pair_searcher.hpp"
#include "preprocess/preprocess.hpp"
#include "refine/global_refine.hpp"
#include "refine/refine.hpp"
#include "slab_mover/slab_mover.hpp"
#include "tomo/tomo.hpp"
#include "tracks/patch_tracks.hpp"
#include "view_correlation/view_correlation.hpp"

namespace stackalign::cuda {
namespace {
[[noreturn]] void no_cuda() {
    throw UnsupportedError("this stackalign was built without CUDA; install the CUDA toolkit (nvcc on PATH) and "
                           "rebuild with 'make', or use --backend cpu");
}
}  // namespace

bool compiled_in() { return false; }
int device_count() { return 0; }
std::string device_name(int) { return "none"; }
void select_device(int) { no_cuda(); }
bool context_made(int) { return false; }
bool lock_pages(void*, std::size_t, int) { return false; }
void unlock_pages(void*) {}
ContextsStarting::ContextsStarting(const std::vector<int>&) {}
ContextsStarting::~ContextsStarting() = default;
DeviceMemoryCounts device_memory_counts() { return {}; }
std::unique_ptr<PairSearcher> make_pair_searcher(const SearchSetup&, int, SearcherPriority) { no_cuda(); }
BinImage preprocess(const RawFrame&, const PreprocessParams&, int) { no_cuda(); }
RawFrame warp_frame(const RawFrame&, const FrameWarp&, int) { no_cuda(); }
std::unique_ptr<FrameMover> make_frame_mover(int, int, bool) { no_cuda(); }
MtbProjections mtb_projections(const RawFrame&, const MtbParams&, int) { no_cuda(); }
std::vector<std::uint32_t> brightness_histogram(const RawFrame&, int) { no_cuda(); }
std::vector<HistogramStrategy> strategies(const MiSearchParams&, int) { return {}; }
std::vector<std::uint32_t> joint_histograms(const BinImage&, const BinImage&, const MiSearchParams&, HistogramStrategy, int) { no_cuda(); }
std::vector<BinMoments> cr_moments(const BinImage&, const BinImage&, const MiSearchParams&, HistogramStrategy, int) { no_cuda(); }
std::vector<double> mi_map(const BinImage&, const BinImage&, const MiSearchParams&, HistogramStrategy, int, int) { no_cuda(); }
MiPeak mi_search(const BinImage&, const BinImage&, const MiSearchParams&, HistogramStrategy, int) { no_cuda(); }
std::vector<MiPeak> mi_search_windows(const BinImage&, const BinImage&, const MiSearchParams&,
                                      const std::vector<WindowCorner>&, HistogramStrategy, int, int) { no_cuda(); }
std::string describe_search(const BinImage&, const BinImage&, const MiSearchParams&, HistogramStrategy, int) { no_cuda(); }
RefineFeatures refine_features(const RawFrame&, RefineOn, const PreprocessParams&, float, int) { no_cuda(); }
std::vector<std::uint64_t> refine_statistics(const RefineFeatures&, const RefineFeatures&, const RefineParams&,
                                             const std::vector<ContinuousShift>&, int, ParzenAdd) { no_cuda(); }
std::unique_ptr<AffineStatistics> make_affine_statistics(const RefineFeatures&, const RefineFeatures&,
                                                         const RefineParams&, const SampleGrid&, int) { no_cuda(); }
Reprojection reproject_leave_one_out(const std::vector<float>&, const TomoGeometry&, int, TomoOutputs) { no_cuda(); }
PatchTracks track_patches(const std::vector<ImageF>&, const std::vector<double>&, int, bool, int) { no_cuda(); }
std::unique_ptr<ViewCorrelator> make_view_correlator(const std::vector<std::vector<float>>&, int, int, int, int) {
    no_cuda();
}
void sample_on_axis_grid(const RawFrame&, const Transform&, const AxisGrid&, float*, int) { no_cuda(); }
std::unique_ptr<GpuLeastSquares> factor_on_gpu(const MirroredRows&, int) { no_cuda(); }
void open_least_squares(int, int) { no_cuda(); }
std::shared_ptr<const GpuBoxedViews> keep_boxed_views(const BoxedViews&, const MovedBlock&, int) { no_cuda(); }
double time_search_ms(const BinImage&, const BinImage&, const MiSearchParams&, HistogramStrategy, int, int, int) { no_cuda(); }

}  // namespace stackalign::cuda
