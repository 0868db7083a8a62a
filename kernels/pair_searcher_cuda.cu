// The CUDA twin of the pair searcher: frames are uploaded and preprocessed
// once into one of kSearcherSlots device slots, with their refinement features
// made there too; each pair search reads two slots.
#include <algorithm>
#include <array>
#include <memory>

#include "cuda_api.hpp"
#include "cuda_common.cuh"
#include "pair_searcher.hpp"
#include "tuned_choice.cuh"
#include "mi_search/mi_search_cuda.cuh"
#include "mtb/mtb_projection_cuda.cuh"
#include "preprocess/preprocess_cuda.cuh"
#include "refine/refine_cuda.cuh"

namespace stackalign::cuda {
namespace {

class CudaPairSearcher : public PairSearcher {
public:
    CudaPairSearcher(const SearchSetup& s, int gpu, SearcherPriority priority)
        : setup_((select_device(gpu), s)), gpu_(gpu), stream_(priority == SearcherPriority::first),
          pre_(s.preprocess) {
        setup_.search = sampled_as(s.search, s.histogram);
        if (s.histogram != HistogramStrategy::automatic)
            search_ = std::make_unique<DeviceMiSearch>(setup_.search, s.histogram, gpu);
    }

    void load(int slot, const RawFrame& frame, const LoadOptions& how) override {
        load_given(slot, frame, nullptr, how);
    }
    void load_warped(int slot, const RawFrame& frame, const LinearTransform& warp, double fill,
                     const LoadOptions& how) override {
        if (host_edge_features()) {
            PairSearcher::load_warped(slot, frame, warp, fill, how);  // resampled on the host
            given_uploaded_ = false;  // what was uploaded is a copy resampled on the host, not `frame`
            return;
        }
        const FrameWarp w = frame_warp(warp, fill);
        load_given(slot, frame, &w, how);
    }
    ContinuousShift refine(int ref_slot, int mov_slot, const MiPeak& peak) override {
        return refine_window(ref_slot, mov_slot, setup_corner(setup_), peak);
    }
    ContinuousShift refine_window(int ref_slot, int mov_slot, const WindowCorner& corner, const MiPeak& peak) override {
        const DeviceFeatures &ref = smoothed(ref_slot), &mov = prefiltered(mov_slot);
        const RefineParams p = refine_params_at(ref_slot, mov_slot, corner, peak.centre);
        return refine_search_peak(setup_, p, peak, [&](const RefineParams& q, const std::vector<ContinuousShift>& s) {
            if (q.metric == Metric::ncc) prefiltered(ref_slot);
            return refiner_.statistics(ref, mov, q, s, stream_);
        });
    }
    // The bin ranges from the features on the device (one launch, one wait).
    RefineParams refine_params_at(int ref_slot, int mov_slot, const WindowCorner& corner,
                                  const IntShift& centre) override {
        const DeviceFeatures &ref = smoothed(ref_slot), &mov = smoothed(mov_slot);
        const RefineRegion region = refine_region(setup_, corner);
        const auto [ref_box, mov_box] = refine_boxes(region.window, centre, region.reach);
        const auto [ref_range, mov_range] = features_maker_.ranges(ref, ref_box, mov, mov_box, stream_);
        return refine_params_from(ref_range, mov_range, mov.levels, region.window, setup_.refine_metric);
    }
    std::unique_ptr<AffineStatistics> affine_statistics(int ref_slot, int mov_slot, const RefineParams& p,
                                                        const SampleGrid& grid) override {
        return make_affine_statistics(prefiltered(ref_slot), prefiltered(mov_slot), p, grid, stream_);
    }
    // On the host only when asked for (rigid and landmark refinements).
    const RefineFeatures* features(int slot) const override {
        if (setup_.subpixel != Subpixel::continuous) return nullptr;
        if (!host_features_[slot]) download(prefiltered(slot), features_[slot], stream_);
        host_features_[slot] = true;
        return &features_[slot];
    }
    MiPeak search(int ref_slot, int mov_slot, const IntShift& centre) override {
        const SearchWindow& w = setup_.search.window;
        return search_from(ref_slot, mov_slot, {WindowCorner{w.x, w.y, w.z}}, centre).front();
    }
    MiPeak search_near(int ref_slot, int mov_slot, const IntShift& centre, const ShiftRange& reach,
                       const IntShift& about, const ShiftStep& step) override {
        check_near(centre, reach, step, setup_.search.max_shift, about);
        const SearchWindow& w = setup_.search.window;
        return search_from(ref_slot, mov_slot, {WindowCorner{w.x, w.y, w.z}}, centre, reach, step).front();
    }
    std::vector<MiPeak> search_windows(int ref_slot, int mov_slot, const std::vector<WindowCorner>& corners) override {
        return search_from(ref_slot, mov_slot, corners, IntShift{});
    }
    std::string describe() const override {
        std::string d = "cuda (GPU " + std::to_string(gpu_) + ": " + device_name(gpu_) + ")";
        if (search_) d += "; " + search_->policy().describe();
        if (search_ && !search_->adaptive_summary().empty()) d += "; " + search_->adaptive_summary();
        if (!tuning_.empty()) d += "; strategy " + tuning_;
        if (!refiner_.describe().empty()) d += "; " + refiner_.describe();
        return d;
    }

private:
    // The refinement's edges with no Sobel step in the search's bins: made on the host.
    bool host_edge_features() const {
        return setup_.subpixel == Subpixel::continuous && setup_.refine_on == RefineOn::edges && !setup_.preprocess.sobel;
    }
    // The frame a load was given, uploaded unless it is the last one given
    // and the preprocessor still holds its upload.
    void load_given(int slot, const RawFrame& frame, const FrameWarp* warp, const LoadOptions& how) {
        check_sample(frame, how);
        const bool uploaded = how.same_frame && given_uploaded_;
        given_uploaded_ = false;
        const float* normalised = pre_.normalise(frame, warp, uploaded, stream_);
        given_uploaded_ = true;
        load_from(slot, frame, normalised, how);
    }
    // A slot's features as a reference reads them (smooth, levels), and
    // with their coefficients, prefiltered on first use (Prefilter::later).
    const DeviceFeatures& smoothed(int slot) const {
        if (!with_features_[slot]) no_features(slot);
        return device_features_[slot];
    }
    const DeviceFeatures& prefiltered(int slot) const {
        if (!with_features_[slot]) no_features(slot);
        if (!prefiltered_[slot]) features_maker_.prefilter(device_features_[slot], stream_);
        prefiltered_[slot] = true;
        return device_features_[slot];
    }
    // The rest of a load, from `normalised` (the frame, or its warped copy,
    // mapped to 0..255 on the device).
    void load_from(int slot, const RawFrame& frame, const float* normalised, const LoadOptions& how) {
        const PixelSample& sample = how.sample;
        slots_[slot].reserve(std::size_t(sample.width(frame.width)) * sample.height(frame.height) * frame.depth);
        images_[slot] = {slots_[slot].get(), sample.width(frame.width), sample.height(frame.height)};
        const RefineImage g{frame.width, frame.height, frame.depth};
        const bool continuous = setup_.subpixel == Subpixel::continuous && how.refine;
        with_features_[slot] = continuous;
        host_features_[slot] = false;
        prefiltered_[slot] = false;
        // The features come from the preprocessing's own intermediate
        // images, made on the GPU as the CPU twin makes them on the host.
        if (continuous && setup_.refine_on == RefineOn::intensity)
            features_maker_.make(normalised, g, RefineOn::intensity, setup_.refine_sigma, device_features_[slot],
                                 stream_, Prefilter::later);
        const float* edges = pre_.edges(frame.width, frame.height, frame.depth, stream_);
        if (continuous && setup_.refine_on == RefineOn::edges) {
            if (!host_edge_features()) {
                features_maker_.make(edges, g, RefineOn::edges, setup_.refine_sigma, device_features_[slot], stream_,
                                     Prefilter::later);
            } else {  // the search's bins have no Sobel step; the refinement's edges do
                features_[slot] =
                    stackalign::refine_features(frame, setup_.refine_on, setup_.preprocess, setup_.refine_sigma);
                refiner_.upload(device_features_[slot], features_[slot], stream_);
                host_features_[slot] = true;
                prefiltered_[slot] = true;
            }
        }
        if (sample.stride > 1) pre_.quantize(edges, frame.width, frame.height, sample, slots_[slot].get(), stream_);
        else pre_.quantize(edges, frame.pixel_count(), slots_[slot].get(), stream_);
        // Done here, so the time is the preprocessing's (run.json), not the next search's.
        CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

    std::vector<MiPeak> search_from(int ref_slot, int mov_slot, const std::vector<WindowCorner>& corners,
                                    const IntShift& centre) {
        return search_from(ref_slot, mov_slot, corners, centre, setup_.search.max_shift, ShiftStep{});
    }
    std::vector<MiPeak> search_from(int ref_slot, int mov_slot, const std::vector<WindowCorner>& corners,
                                    const IntShift& centre, const ShiftRange& reach, const ShiftStep& step) {
        if (corners.empty()) return {};
        if (!search_) tune(images_[ref_slot], images_[mov_slot], corners.front());
        search_->centre_on(centre, reach, step);
        return search_->search(images_[ref_slot], images_[mov_slot], corners, stream_);
    }
    // histogram = "auto": every strategy gives the same answer, so the first
    // pair is searched with each (after a warm-up run) and the fastest is
    // kept, once per GPU and search shape in the process, and remembered
    // for later processes (tuned_choice.hpp).
    void tune(const DeviceImage& ref, const DeviceImage& mov, const WindowCorner& at) {
        const MiSearchParams& p = setup_.search;
        const TunedChoice<HistogramStrategy>& tuned = tuned_on_gpu<HistogramStrategy>(
            "search histograms", gpu_,
            std::array<int, 9>{p.bins, int(p.metric), p.sample_stride, p.window.width, p.window.height, p.window.depth,
                               p.max_shift.x, p.max_shift.y, p.max_shift.z},
            [&](HistogramStrategy way) {
                const std::vector<HistogramStrategy> ways = auto_strategies(p, gpu_);
                return std::find(ways.begin(), ways.end(), way) != ways.end();
            },
            [&](TunedChoice<HistogramStrategy>& timing) {
                for (const HistogramStrategy name : auto_strategies(p, gpu_)) {
                    DeviceMiSearch candidate(p, name, gpu_);
                    candidate.search(ref, mov, {at}, stream_);
                    // The better of two: the other searchers' loads may share the GPU meanwhile.
                    timing.timed(name, name_of(name),
                                 std::min(timed_search_ms(candidate, ref, mov, at, stream_),
                                          timed_search_ms(candidate, ref, mov, at, stream_)));
                }
            });
        search_ = std::make_unique<DeviceMiSearch>(p, tuned.choice, gpu_);
        tuning_ = tuned.how("pair");
    }

    SearchSetup setup_;
    int gpu_;
    Stream stream_;
    DevicePreprocessor pre_;
    std::unique_ptr<DeviceMiSearch> search_;
    std::string tuning_;
    DeviceBuffer<std::uint8_t> slots_[kSearcherSlots];
    DeviceImage images_[kSearcherSlots]{};
    // continuous refinement: the features on the device, and their host
    // copies once asked for
    // (the coefficients prefiltered once needed)
    mutable DeviceFeatures device_features_[kSearcherSlots];
    mutable RefineFeatures features_[kSearcherSlots];
    mutable bool host_features_[kSearcherSlots] = {};
    mutable bool prefiltered_[kSearcherSlots] = {};
    bool with_features_[kSearcherSlots] = {};
    bool given_uploaded_ = false;  // the preprocessor holds the upload of the last frame a load was given
    mutable DeviceFeatureMaker features_maker_;
    DeviceRefiner refiner_;
};

class CudaMtbSearcher : public PairSearcher {
public:
    CudaMtbSearcher(const SearchSetup& s, int gpu) : setup_((select_device(gpu), s)), gpu_(gpu), mtb_(s.mtb()) {}
    void load(int slot, const RawFrame& frame, const LoadOptions& how) override {
        no_sample_of_projections(how);
        slots_[slot] = mtb_.run(frame, stream_);
    }
    MiPeak search(int ref_slot, int mov_slot, const IntShift& centre) override {
        if (centre.x || centre.y || centre.z) throw UnsupportedError("mtb-projection searches about shift 0 only");
        return mtb_search(slots_[ref_slot], slots_[mov_slot], setup_.mtb());
    }
    MiPeak search_near(int, int, const IntShift&, const ShiftRange&, const IntShift&, const ShiftStep&) override {
        no_near_search();
    }
    ContinuousShift refine(int, int, const MiPeak& peak) override { return parabola_peak(peak); }
    ContinuousShift refine_window(int, int, const WindowCorner&, const MiPeak& peak) override { return parabola_peak(peak); }
    const RefineFeatures* features(int) const override { return nullptr; }
    RefineParams refine_params_at(int, int, const WindowCorner&, const IntShift&) override { no_continuous_form(); }
    std::unique_ptr<AffineStatistics> affine_statistics(int, int, const RefineParams&, const SampleGrid&) override {
        no_continuous_form();
    }
    std::vector<MiPeak> search_windows(int, int, const std::vector<WindowCorner>&) override {
        throw UnsupportedError("mtb-projection searches one 2D window per pair; landmarks need method = \"window\"");
    }
    std::string describe() const override {
        return "cuda (GPU " + std::to_string(gpu_) + ": " + device_name(gpu_) + "); mtb-projection";
    }

private:
    SearchSetup setup_;
    int gpu_;
    Stream stream_;
    DeviceMtb mtb_;
    MtbProjections slots_[kSearcherSlots];
};

}  // namespace

std::unique_ptr<PairSearcher> make_pair_searcher(const SearchSetup& setup, int gpu, SearcherPriority priority) {
    if (setup.method == SearchMethod::mtb_projection) return std::make_unique<CudaMtbSearcher>(setup, gpu);
    return std::make_unique<CudaPairSearcher>(setup, gpu, priority);
}

}  // namespace stackalign::cuda
