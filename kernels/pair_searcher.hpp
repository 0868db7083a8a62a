// What the pipelines ask of a backend: preprocess a frame (or volume) into one
// of kSearcherSlots slots, then search one slot against another. Each frame is
// preprocessed (and, on the GPU, uploaded) once and serves every pair it
// belongs to while it stays in a slot (a view's two neighbour pairs and its
// skip pair); a landmark run loads two volumes once and searches per point.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "../src/core/choices.hpp"
#include "../src/alignment/apply.hpp"
#include "backend.hpp"
#include "mi_search/mi_search.hpp"
#include "mtb/mtb_projection.hpp"
#include "preprocess/preprocess.hpp"
#include "refine/global_refine.hpp"
#include "refine/refine.hpp"

namespace stackalign {


constexpr int kSearcherSlots = 4;

// How a slot is loaded.
struct LoadOptions {
    // Make the refinement features too (setup.subpixel = continuous). A
    // rigid search's turned candidates are only ranked by the integer
    // search, the refinement samples the view itself: features for them
    // were 0.3 ms of GPU time, or 13 ms of host time, per 1024^2 view.
    bool refine = true;
    // The frame is the one this searcher's last load was given, unchanged
    // (a candidate turned by another angle): a backend that copied it (to
    // the GPU) may use that copy.
    bool same_frame = false;
    // Keep the bins at this sample of a 2D frame's pixels only (peaks
    // only: `refine` false); the slot is then the sample's size, which the
    // searcher's setup must be made for.
    PixelSample sample;
};

// Options by what a load asks for, the sample left whole.
inline LoadOptions load_options(bool refine, bool same_frame) {
    LoadOptions o;
    o.refine = refine, o.same_frame = same_frame;
    return o;
}

class PairSearcher {
public:
    virtual ~PairSearcher() = default;
    // slot 0 .. kSearcherSlots - 1
    virtual void load(int slot, const RawFrame& frame, const LoadOptions& how) = 0;
    void load(int slot, const RawFrame& frame) { load(slot, frame, LoadOptions{}); }
    // load(slot, transform_frame(frame, warp, fill)): a stretched or turned
    // view. The CUDA searcher resamples on the GPU (the same pixels).
    virtual void load_warped(int slot, const RawFrame& frame, const LinearTransform& warp, double fill,
                             const LoadOptions& how);
    void load_warped(int slot, const RawFrame& frame, const LinearTransform& warp, double fill) {
        load_warped(slot, frame, warp, fill, LoadOptions{});
    }
    // The search of the setup: its window, its shift range about `centre`
    // (0 but for a predicted pair; only the window method takes another).
    virtual MiPeak search(int ref_slot, int mov_slot, const IntShift& centre) = 0;
    MiPeak search(int ref_slot, int mov_slot) { return search(ref_slot, mov_slot, IntShift{}); }
    // The same window over a smaller range: shifts centre + step x k,
    // |k| <= `reach` per axis, which must lie within the setup's range
    // about `about` (the centre a search(ref, mov, about) would take; a
    // logic_error otherwise). A candidate's score is the same as in the
    // whole range's search; the peak's mean and stddev are over these
    // candidates only (their sharpness lattice), its dx and dy from
    // `centre`. Only the window method takes it.
    virtual MiPeak search_near(int ref_slot, int mov_slot, const IntShift& centre, const ShiftRange& reach,
                               const IntShift& about, const ShiftStep& step) = 0;
    MiPeak search_near(int ref_slot, int mov_slot, const IntShift& centre, const ShiftRange& reach,
                       const IntShift& about) {
        return search_near(ref_slot, mov_slot, centre, reach, about, ShiftStep{});
    }
    MiPeak search_near(int ref_slot, int mov_slot, const IntShift& centre, const ShiftRange& reach) {
        return search_near(ref_slot, mov_slot, centre, reach, IntShift{}, ShiftStep{});
    }
    // The same window size and range at each corner, one peak per corner.
    // Many at once so the GPU fills up with all of them (a landmark run).
    virtual std::vector<MiPeak> search_windows(int ref_slot, int mov_slot, const std::vector<WindowCorner>& corners) = 0;
    // The search's peak refined to a continuous shift (setup.subpixel =
    // continuous; refine/refine.hpp): the metric of the slots' smoothed
    // frames maximised near the integer peak (its centre included). Methods
    // without a continuous form answer with the parabola through the peak's
    // neighbours.
    virtual ContinuousShift refine(int ref_slot, int mov_slot, const MiPeak& peak) = 0;
    // The same for a window of the setup's size at `corner` (a landmark's).
    virtual ContinuousShift refine_window(int ref_slot, int mov_slot, const WindowCorner& corner, const MiPeak& peak) = 0;
    // The refinement features load() made for a slot (setup.subpixel =
    // continuous), or nullptr; for other users of the same features.
    // Refining with a slot loaded without them is a logic_error.
    virtual const RefineFeatures* features(int slot) const = 0;
    // A rigid or similarity refinement's parts, from the features the slots
    // keep (on the GPU, without copying them back): the parameters of the
    // window at `corner` searched about `centre`, and the statistics of
    // transforms of the moving slot's features against the reference's.
    // Methods without a continuous form throw.
    virtual RefineParams refine_params_at(int ref_slot, int mov_slot, const WindowCorner& corner,
                                          const IntShift& centre) = 0;
    virtual std::unique_ptr<AffineStatistics> affine_statistics(int ref_slot, int mov_slot, const RefineParams& p,
                                                                const SampleGrid& grid) = 0;
    virtual std::string describe() const = 0;                // backend, device, strategy
};

struct SearchSetup {
    PreprocessParams preprocess;
    MiSearchParams search;
    HistogramStrategy histogram = HistogramStrategy::automatic;
    SearchMethod method = SearchMethod::window;
    int mtb_band = 4;
    Subpixel subpixel = Subpixel::continuous;  // continuous: load() also keeps the refinement features
    RefineOn refine_on = RefineOn::intensity;
    float refine_sigma = kRefineSigma;  // the refinement's smoothing of both frames (px)
    int refine_side = 0;                // the refinement's window cut to its centred part this wide and high; 0: whole
    Metric refine_metric = Metric::mi;  // what the continuous refinement maximises
    // refine_metric = "auto": refine_metric where a rigid pair's values are
    // not linearly related, NCC where they are (auto_refine_params)
    bool refine_auto = false;
    MtbParams mtb() const { return MtbParams{mtb_band, search.window, search.max_shift}; }
};

// Whose work a GPU starts first when several searchers share it: a
// stretched series' chains wait for every step of theirs, the searchers
// taking their skips for nothing, so the chains go `first` (a CUDA stream
// of the highest priority). The CPU searcher has no queue to order.
enum class SearcherPriority { normal, first };

// The searcher of the device's backend (the one entry point; the twins are
// cpu::make_pair_searcher and cuda::make_pair_searcher).
std::unique_ptr<PairSearcher> make_pair_searcher(const Device& device, const SearchSetup& setup,
                                                 SearcherPriority priority = SearcherPriority::normal);

// What a searcher without a continuous form (mtb-projection) answers when
// asked for a rigid refinement's parts: an UnsupportedError.
[[noreturn]] void no_continuous_form();
// What a searcher throws when asked to refine with a slot loaded without
// its refinement features (LoadOptions::refine false): a logic_error.
[[noreturn]] void no_features(int slot);
// What a searcher throws when a load's sample (LoadOptions::sample) is not
// of a 2D frame's bins for peaks only: a logic_error.
void check_sample(const RawFrame& frame, const LoadOptions& how);
// What the mtb-projection searchers throw when asked for a sample: a logic_error.
void no_sample_of_projections(const LoadOptions& how);

// search_near's check that `reach` steps of `step` about `centre` lie within `range` about `about`.
void check_near(const IntShift& centre, const ShiftRange& reach, const ShiftStep& step, const ShiftRange& range,
                const IntShift& about);
// The sharpness lattice of a range (mi_search.hpp): its candidates either
// side and their step. search_near over it about a search's centre gives
// that search's mean and stddev.
std::pair<ShiftRange, ShiftStep> sharpness_lattice(const ShiftRange& range);
// What the mtb-projection searchers answer to search_near: an UnsupportedError.
[[noreturn]] void no_near_search();

// The parabola through the peak's neighbours, per axis, from the peak's
// centre (the refinement of `Subpixel::parabola`, and of methods without a
// continuous form).
ContinuousShift parabola_peak(const MiPeak& peak);
// The window of the setup's size at `corner` (its centred part refine_side
// on a side, where that is set and smaller), and how far from its place
// (moved by the search's centre) the continuous search may sample.
struct RefineRegion {
    SearchWindow window;
    ShiftRange reach;
};
RefineRegion refine_region(const SearchSetup& setup, const WindowCorner& corner);
// The refinement parameters of that window, searched about `centre`.
RefineParams refine_params_for(const SearchSetup& setup, const WindowCorner& corner, const RefineFeatures& ref,
                               const RefineFeatures& mov, const IntShift& centre = {});
// The corner of the setup's own window.
WindowCorner setup_corner(const SearchSetup& setup);
// A search's peak refined (refine_pair) with the statistics of one backend:
// what both searchers' refine() do, the backend's part being `statistics`.
using PairStatistics =
    std::function<std::vector<std::uint64_t>(const RefineParams&, const std::vector<ContinuousShift>&)>;
ContinuousShift refine_search_peak(const SearchSetup& setup, const WindowCorner& corner, const RefineFeatures& ref,
                                   const RefineFeatures& mov, const MiPeak& peak, const PairStatistics& statistics);
// The same with the parameters made already (features kept on a device).
ContinuousShift refine_search_peak(const SearchSetup& setup, const RefineParams& p, const MiPeak& peak,
                                   const PairStatistics& statistics);

namespace cpu {
std::unique_ptr<PairSearcher> make_pair_searcher(const SearchSetup& setup);
}
namespace cuda {
std::unique_ptr<PairSearcher> make_pair_searcher(const SearchSetup& setup, int gpu,
                                                 SearcherPriority priority = SearcherPriority::normal);
}

}  // namespace stackalign
