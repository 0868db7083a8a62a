// What the pipelines ask of a backend: preprocess a frame (or volume) into one
// of two slots, then search one slot against the other. Each frame is
// preprocessed (and, on the GPU, uploaded) once and serves both pairs it
// belongs to; a landmark run loads two volumes once and searches per point.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "mi_search/mi_search.hpp"
#include "mtb/mtb_projection.hpp"
#include "preprocess/preprocess.hpp"
#include "refine/refine.hpp"

namespace stackalign {


class PairSearcher {
public:
    virtual ~PairSearcher() = default;
    virtual void load(int slot, const RawFrame& frame) = 0;  // slot 0 or 1
    // The search of the setup: its window, its shift range.
    virtual MiPeak search(int ref_slot, int mov_slot) = 0;
    // The same window size and range at each corner, one peak per corner.
    // Many at once so the GPU fills up with all of them (a landmark run).
    virtual std::vector<MiPeak> search_windows(int ref_slot, int mov_slot, const std::vector<WindowCorner>& corners) = 0;
    // The search's peak refined to a continuous shift (setup.subpixel =
    // continuous; refine/refine.hpp): the metric of the slots' smoothed
    // frames maximised near the integer peak. Methods without a continuous
    // form answer with the parabola through the peak's neighbours.
    virtual ContinuousShift refine(int ref_slot, int mov_slot, const MiPeak& peak) = 0;
    // The same for a window of the setup's size at `corner` (a landmark's).
    virtual ContinuousShift refine_window(int ref_slot, int mov_slot, const WindowCorner& corner, const MiPeak& peak) = 0;
    // The refinement features load() made for a slot (setup.subpixel =
    // continuous), or nullptr; for other users of the same features.
    virtual const RefineFeatures* features(int slot) const = 0;
    virtual std::string describe() const = 0;                // backend, device, strategy
};

// window: every candidate shift scored by a histogram metric (mi_search);
// mtb_projection: Guthier et al.'s bitmap projections (mtb_projection.hpp),
// which use the raw frames, not the preprocessed bins.
enum class SearchMethod { window, mtb_projection };
template <>
struct EnumNames<SearchMethod> {
    static constexpr const char* names[] = {"window", "mtb-projection"};
};

struct SearchSetup {
    PreprocessParams preprocess;
    MiSearchParams search;
    HistogramStrategy histogram = HistogramStrategy::automatic;
    SearchMethod method = SearchMethod::window;
    int mtb_band = 4;
    Subpixel subpixel = Subpixel::continuous;  // continuous: load() also keeps the refinement features
    RefineOn refine_on = RefineOn::intensity;
    MtbParams mtb() const { return MtbParams{mtb_band, search.window, search.max_shift}; }
};

// The searcher of the device's backend (the one entry point; the twins are
// cpu::make_pair_searcher and cuda::make_pair_searcher).
std::unique_ptr<PairSearcher> make_pair_searcher(const Device& device, const SearchSetup& setup);

// The parabola through the peak's neighbours, per axis (the refinement of
// `Subpixel::parabola`, and of methods without a continuous form).
ContinuousShift parabola_peak(const MiPeak& peak);
// The refinement parameters of a window of the setup's size at `corner`.
RefineParams refine_params_for(const SearchSetup& setup, const WindowCorner& corner, const RefineFeatures& ref,
                               const RefineFeatures& mov);
// The corner of the setup's own window.
WindowCorner setup_corner(const SearchSetup& setup);
// A search's peak refined (refine_pair) with the histograms of one backend:
// what both searchers' refine() do, the backend's part being `histograms`.
using ParzenHistograms =
    std::function<std::vector<std::uint64_t>(const RefineParams&, const std::vector<ContinuousShift>&)>;
ContinuousShift refine_search_peak(const SearchSetup& setup, const WindowCorner& corner, const RefineFeatures& ref,
                                   const RefineFeatures& mov, const MiPeak& peak, const ParzenHistograms& histograms);

namespace cpu {
std::unique_ptr<PairSearcher> make_pair_searcher(const SearchSetup& setup);
}
namespace cuda {
std::unique_ptr<PairSearcher> make_pair_searcher(const SearchSetup& setup, int gpu);
}

}  // namespace stackalign
