// The CUDA twin of the pair searcher: frames are uploaded and preprocessed
// once into one of two device slots; each pair search reads both slots.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "cuda_api.hpp"
#include "cuda_common.cuh"
#include "pair_searcher.hpp"
#include "mi_search/mi_search_cuda.cuh"
#include "mtb/mtb_projection_cuda.cuh"
#include "preprocess/preprocess_cuda.cuh"
#include "refine/refine_cuda.cuh"

namespace stackalign::cuda {
namespace {

class CudaPairSearcher : public PairSearcher {
public:
    CudaPairSearcher(const SearchSetup& s, int gpu)
        : setup_((select_device(gpu), s)), gpu_(gpu), pre_(s.preprocess) {
        setup_.search = sampled_as(s.search, s.histogram);
        if (s.histogram != HistogramStrategy::automatic)
            search_ = std::make_unique<DeviceMiSearch>(setup_.search, s.histogram, gpu);
    }

    void load(int slot, const RawFrame& frame) override {
        slots_[slot].reserve(frame.pixel_count());
        pre_.run(frame, slots_[slot].get(), stream_);
        images_[slot] = {slots_[slot].get(), frame.width, frame.height};
        if (setup_.subpixel == Subpixel::continuous) {
            features_[slot] = refine_features(frame, setup_.refine_on, setup_.preprocess);  // on the host, as the CPU twin makes them
            refiner_.upload(device_features_[slot], features_[slot], stream_);
        }
    }
    ContinuousShift refine(int ref_slot, int mov_slot, const MiPeak& peak) override {
        return refine_window(ref_slot, mov_slot, setup_corner(setup_), peak);
    }
    ContinuousShift refine_window(int ref_slot, int mov_slot, const WindowCorner& corner, const MiPeak& peak) override {
        return refine_search_peak(setup_, corner, features_[ref_slot], features_[mov_slot], peak,
                                  [&](const RefineParams& p, const std::vector<ContinuousShift>& s) {
                                      return refiner_.histograms(device_features_[ref_slot], device_features_[mov_slot],
                                                                 p, s, stream_);
                                  });
    }
    const RefineFeatures* features(int slot) const override {
        return setup_.subpixel == Subpixel::continuous ? &features_[slot] : nullptr;
    }
    MiPeak search(int ref_slot, int mov_slot) override {
        const SearchWindow& w = setup_.search.window;
        return search_windows(ref_slot, mov_slot, {WindowCorner{w.x, w.y, w.z}}).front();
    }
    std::vector<MiPeak> search_windows(int ref_slot, int mov_slot, const std::vector<WindowCorner>& corners) override {
        if (corners.empty()) return {};
        if (!search_) tune(images_[ref_slot], images_[mov_slot], corners.front());
        return search_->search(images_[ref_slot], images_[mov_slot], corners, stream_);
    }
    std::string describe() const override {
        std::string d = "cuda (GPU " + std::to_string(gpu_) + ": " + device_name(gpu_) + ")";
        if (search_) d += "; " + search_->policy().describe();
        if (search_ && !search_->adaptive_summary().empty()) d += "; " + search_->adaptive_summary();
        if (!tuning_.empty()) d += "; auto-tuned on the first pair: " + tuning_;
        return d;
    }

private:
    // histogram = "auto": every strategy gives the same answer, so the first
    // pair is searched once with each (after a warm-up run) and the fastest is
    // kept for the rest of the run.
    void tune(const DeviceImage& ref, const DeviceImage& mov, const WindowCorner& at) {
        double best_ms = 0;
        for (const HistogramStrategy name : auto_strategies(setup_.search, gpu_)) {
            auto candidate = std::make_unique<DeviceMiSearch>(setup_.search, name, gpu_);
            candidate->search(ref, mov, {at}, stream_);
            const double ms = timed_search_ms(*candidate, ref, mov, at, stream_);
            char buf[64];
            std::snprintf(buf, sizeof buf, "%s%s %.3f ms", tuning_.empty() ? "" : ", ", name_of(name).c_str(), ms);
            tuning_ += buf;
            if (!search_ || ms < best_ms) {
                search_ = std::move(candidate);
                best_ms = ms;
            }
        }
    }

    SearchSetup setup_;
    int gpu_;
    Stream stream_;
    DevicePreprocessor pre_;
    std::unique_ptr<DeviceMiSearch> search_;
    std::string tuning_;
    DeviceBuffer<std::uint8_t> slots_[2];
    DeviceImage images_[2]{};
    // continuous refinement: host features (for the value ranges) and their device copies
    RefineFeatures features_[2];
    DeviceFeatures device_features_[2];
    DeviceRefiner refiner_;
};

class CudaMtbSearcher : public PairSearcher {
public:
    CudaMtbSearcher(const SearchSetup& s, int gpu) : setup_((select_device(gpu), s)), gpu_(gpu), mtb_(s.mtb()) {}
    void load(int slot, const RawFrame& frame) override { slots_[slot] = mtb_.run(frame, stream_); }
    MiPeak search(int ref_slot, int mov_slot) override { return mtb_search(slots_[ref_slot], slots_[mov_slot], setup_.mtb()); }
    ContinuousShift refine(int, int, const MiPeak& peak) override { return parabola_peak(peak); }
    ContinuousShift refine_window(int, int, const WindowCorner&, const MiPeak& peak) override { return parabola_peak(peak); }
    const RefineFeatures* features(int) const override { return nullptr; }
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
    MtbProjections slots_[2];
};

}  // namespace

std::unique_ptr<PairSearcher> make_pair_searcher(const SearchSetup& setup, int gpu) {
    if (setup.method == SearchMethod::mtb_projection) return std::make_unique<CudaMtbSearcher>(setup, gpu);
    return std::make_unique<CudaPairSearcher>(setup, gpu);
}

}  // namespace stackalign::cuda
