#include "pair_searcher.hpp"

#include "../src/core/error.hpp"

namespace stackalign {

namespace {

class CpuPairSearcher : public PairSearcher {
public:
    explicit CpuPairSearcher(const SearchSetup& s) : setup_(s) { setup_.search = sampled_as(s.search, s.histogram); }
    // The refinement's features start from the preprocessing's own images
    // (the normalised frame, or its edges where the search has a Sobel
    // step), as on the GPU: made twice, they were a third of a small
    // frame's load.
    void load(int slot, const RawFrame& frame, const LoadOptions& how) override {
        check_sample(frame, how);
        const PreprocessParams& pp = setup_.preprocess;
        with_features_[slot] = setup_.subpixel == Subpixel::continuous && how.refine;
        prefiltered_[slot] = false;
        cpu::Preprocessed made = cpu::preprocess_keeping(frame, pp);
        slots_[slot] = how.sample.stride > 1 ? sampled_bins(made.bins, how.sample) : std::move(made.bins);
        if (!with_features_[slot]) {
            features_[slot] = RefineFeatures{};
        } else if (setup_.refine_on == RefineOn::intensity) {
            features_[slot] = refine_features_from(std::move(made.normalised), RefineOn::intensity, setup_.refine_sigma,
                                                   Prefilter::later);
        } else {  // edges: the search's, or Sobel of its mean filter where its bins have none
            ImageF edges = pp.sobel ? std::move(made.values) : cpu::sobel_magnitude(made.values);
            features_[slot] = refine_features_from(std::move(edges), RefineOn::edges, setup_.refine_sigma, Prefilter::later);
        }
    }
    MiPeak search(int ref_slot, int mov_slot, const IntShift& centre) override {
        return search_about(ref_slot, mov_slot, centre, setup_.search.max_shift, ShiftStep{});
    }
    MiPeak search_near(int ref_slot, int mov_slot, const IntShift& centre, const ShiftRange& reach,
                       const IntShift& about, const ShiftStep& step) override {
        check_near(centre, reach, step, setup_.search.max_shift, about);
        return search_about(ref_slot, mov_slot, centre, reach, step);
    }
    std::vector<MiPeak> search_windows(int ref_slot, int mov_slot, const std::vector<WindowCorner>& corners) override {
        std::vector<MiPeak> peaks;
        MiSearchParams p = setup_.search;
        for (const WindowCorner& c : corners) {
            p.window.x = c.x;
            p.window.y = c.y;
            p.window.z = c.z;
            peaks.push_back(cpu::mi_search(slots_[ref_slot], slots_[mov_slot], p));
        }
        return peaks;
    }
    ContinuousShift refine(int ref_slot, int mov_slot, const MiPeak& peak) override {
        return refine_window(ref_slot, mov_slot, setup_corner(setup_), peak);
    }
    ContinuousShift refine_window(int ref_slot, int mov_slot, const WindowCorner& corner, const MiPeak& peak) override {
        const RefineFeatures &ref = smoothed(ref_slot), &mov = prefiltered(mov_slot);
        return refine_search_peak(setup_, corner, ref, mov, peak,
                                  [&](const RefineParams& p, const std::vector<ContinuousShift>& s) {
                                      if (p.metric == Metric::ncc) prefiltered(ref_slot);
                                      return cpu::refine_statistics(ref, mov, p, s);
                                  });
    }
    const RefineFeatures* features(int slot) const override {
        return setup_.subpixel == Subpixel::continuous ? &prefiltered(slot) : nullptr;
    }
    RefineParams refine_params_at(int ref_slot, int mov_slot, const WindowCorner& corner,
                                  const IntShift& centre) override {
        return refine_params_for(setup_, corner, smoothed(ref_slot), smoothed(mov_slot), centre);
    }
    std::unique_ptr<AffineStatistics> affine_statistics(int ref_slot, int mov_slot, const RefineParams& p,
                                                        const SampleGrid& grid) override {
        return cpu::make_affine_statistics(prefiltered(ref_slot), prefiltered(mov_slot), p, grid);
    }
    std::string describe() const override { return "cpu (OpenMP)"; }

private:
    MiPeak search_about(int ref_slot, int mov_slot, const IntShift& centre, const ShiftRange& range,
                        const ShiftStep& step) const {
        MiSearchParams p = setup_.search;
        p.centre = centre;
        p.max_shift = range;
        p.step = step;
        return cpu::mi_search(slots_[ref_slot], slots_[mov_slot], p);
    }
    // A slot's features as a reference reads them (smooth, levels), and
    // with their coefficients, prefiltered on first use
    // (refine_features_from's Prefilter::later).
    const RefineFeatures& smoothed(int slot) const {
        if (!with_features_[slot]) no_features(slot);
        return features_[slot];
    }
    const RefineFeatures& prefiltered(int slot) const {
        if (!with_features_[slot]) no_features(slot);
        if (!prefiltered_[slot]) prefilter_coefficients(features_[slot]);
        prefiltered_[slot] = true;
        return features_[slot];
    }
    SearchSetup setup_;
    BinImage slots_[kSearcherSlots];
    mutable RefineFeatures features_[kSearcherSlots];  // coefficients prefiltered once needed
    mutable bool prefiltered_[kSearcherSlots] = {};
    bool with_features_[kSearcherSlots] = {};
};

class CpuMtbSearcher : public PairSearcher {
public:
    explicit CpuMtbSearcher(const SearchSetup& s) : params_(s.mtb()) {}
    void load(int slot, const RawFrame& frame, const LoadOptions& how) override {
        no_sample_of_projections(how);
        slots_[slot] = cpu::mtb_projections(frame, params_);
    }
    MiPeak search(int ref_slot, int mov_slot, const IntShift& centre) override {
        if (centre.x || centre.y || centre.z) throw UnsupportedError("mtb-projection searches about shift 0 only");
        return mtb_search(slots_[ref_slot], slots_[mov_slot], params_);
    }
    MiPeak search_near(int, int, const IntShift&, const ShiftRange&, const IntShift&, const ShiftStep&) override {
        no_near_search();
    }
    std::vector<MiPeak> search_windows(int, int, const std::vector<WindowCorner>&) override {
        throw UnsupportedError("mtb-projection searches one 2D window per pair; landmarks need method = \"window\"");
    }
    ContinuousShift refine(int, int, const MiPeak& peak) override { return parabola_peak(peak); }
    ContinuousShift refine_window(int, int, const WindowCorner&, const MiPeak& peak) override { return parabola_peak(peak); }
    const RefineFeatures* features(int) const override { return nullptr; }
    RefineParams refine_params_at(int, int, const WindowCorner&, const IntShift&) override { no_continuous_form(); }
    std::unique_ptr<AffineStatistics> affine_statistics(int, int, const RefineParams&, const SampleGrid&) override {
        no_continuous_form();
    }
    std::string describe() const override { return "cpu (OpenMP); mtb-projection"; }

private:
    MtbParams params_;
    MtbProjections slots_[kSearcherSlots];
};

}  // namespace

std::unique_ptr<PairSearcher> cpu::make_pair_searcher(const SearchSetup& setup) {
    if (setup.method == SearchMethod::mtb_projection) return std::make_unique<CpuMtbSearcher>(setup);
    return std::make_unique<CpuPairSearcher>(setup);
}

}  // namespace stackalign
