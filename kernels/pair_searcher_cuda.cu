// The CUDA backend behind cuda_api.hpp: frames are uploaded and preprocessed
// once into one of two device slots; each pair search reads both slots.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "cuda_api.hpp"
#include "cuda_common.cuh"
#include "mi_search/mi_search_cuda.cuh"
#include "mtb/mtb_projection_cuda.cuh"
#include "preprocess/preprocess_cuda.cuh"

namespace stackalign::cuda {
namespace {

class Stream {
public:
    Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
    ~Stream() { cudaStreamDestroy(s_); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    operator cudaStream_t() const { return s_; }

private:
    cudaStream_t s_{};
};

BinImage download(const DeviceBuffer<std::uint8_t>& d, int w, int h, int depth, cudaStream_t s) {
    BinImage out = BinImage::volume(w, h, depth);
    CUDA_CHECK(cudaMemcpyAsync(out.pixels.data(), d.get(), out.size(), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    return out;
}

void upload(DeviceBuffer<std::uint8_t>& d, const BinImage& im, cudaStream_t s) {
    d.reserve(im.size());
    CUDA_CHECK(cudaMemcpyAsync(d.get(), im.pixels.data(), im.size(), cudaMemcpyHostToDevice, s));
}

void require_same_size(const BinImage& a, const BinImage& b, const MiSearchParams& p) {
    if (a.width != b.width || a.height != b.height || a.depth != b.depth)
        throw InternalError("reference and moving images differ in size");
    check_window_fits(p, a.width, a.height, a.depth);
}

// Milliseconds of one search, timed with events on the search's stream.
double timed_search_ms(DeviceMiSearch& search, const DeviceImage& ref, const DeviceImage& mov, const WindowCorner& at,
                       cudaStream_t s) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start, s));
    search.search(ref, mov, {at}, s);
    CUDA_CHECK(cudaEventRecord(stop, s));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return ms;
}

class CudaPairSearcher : public PairSearcher {
public:
    explicit CudaPairSearcher(const SearchSetup& s) : setup_((select_device(s.gpu), s)), pre_(s.preprocess) {
        if (s.histogram != "auto") search_ = std::make_unique<DeviceMiSearch>(s.search, s.histogram, s.gpu);
    }

    void load(int slot, const RawFrame& frame) override {
        slots_[slot].reserve(frame.pixel_count());
        pre_.run(frame, slots_[slot].get(), stream_);
        images_[slot] = {slots_[slot].get(), frame.width, frame.height};
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
        std::string d = "cuda (GPU " + std::to_string(setup_.gpu) + ": " + device_name(setup_.gpu) + ")";
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
        for (const std::string& name : auto_strategies(setup_.search, setup_.gpu)) {
            auto candidate = std::make_unique<DeviceMiSearch>(setup_.search, name, setup_.gpu);
            candidate->search(ref, mov, {at}, stream_);
            const double ms = timed_search_ms(*candidate, ref, mov, at, stream_);
            char buf[64];
            std::snprintf(buf, sizeof buf, "%s%s %.3f ms", tuning_.empty() ? "" : ", ", name.c_str(), ms);
            tuning_ += buf;
            if (!search_ || ms < best_ms) {
                search_ = std::move(candidate);
                best_ms = ms;
            }
        }
    }

    SearchSetup setup_;
    Stream stream_;
    DevicePreprocessor pre_;
    std::unique_ptr<DeviceMiSearch> search_;
    std::string tuning_;
    DeviceBuffer<std::uint8_t> slots_[2];
    DeviceImage images_[2]{};
};

class CudaMtbSearcher : public PairSearcher {
public:
    explicit CudaMtbSearcher(const SearchSetup& s) : setup_((select_device(s.gpu), s)), mtb_(s.mtb()) {}
    void load(int slot, const RawFrame& frame) override { slots_[slot] = mtb_.run(frame, stream_); }
    MiPeak search(int ref_slot, int mov_slot) override { return mtb_search(slots_[ref_slot], slots_[mov_slot], setup_.mtb()); }
    std::vector<MiPeak> search_windows(int, int, const std::vector<WindowCorner>&) override {
        throw UnsupportedError("mtb-projection searches one 2D window per pair; landmarks need method = \"window\"");
    }
    std::string describe() const override {
        return "cuda (GPU " + std::to_string(setup_.gpu) + ": " + device_name(setup_.gpu) + "); mtb-projection";
    }

private:
    SearchSetup setup_;
    Stream stream_;
    DeviceMtb mtb_;
    MtbProjections slots_[2];
};

}  // namespace

std::unique_ptr<PairSearcher> make_pair_searcher(const SearchSetup& setup) {
    if (setup.method == SearchMethod::mtb_projection) return std::make_unique<CudaMtbSearcher>(setup);
    return std::make_unique<CudaPairSearcher>(setup);
}

MtbProjections mtb_projections(const RawFrame& frame, const MtbParams& p, int gpu) {
    select_device(gpu);
    Stream s;
    return DeviceMtb(p).run(frame, s);
}

std::vector<std::uint32_t> brightness_histogram(const RawFrame& frame, int gpu) {
    select_device(gpu);
    Stream s;
    MtbParams p;
    p.window = {0, 0, 0, frame.width, frame.height, 1};
    DeviceMtb mtb(p);
    mtb.run(frame, s);
    return mtb.last_histogram(s);
}

BinImage preprocess(const RawFrame& frame, const PreprocessParams& params, int gpu) {
    select_device(gpu);
    Stream s;
    DevicePreprocessor pre(params);
    DeviceBuffer<std::uint8_t> bins(frame.pixel_count());
    pre.run(frame, bins.get(), s);
    return download(bins, frame.width, frame.height, frame.depth, s);
}

namespace {
// One pair on the device, for the test/bench entry points below.
struct PreparedSearch {
    Stream s;
    DeviceBuffer<std::uint8_t> ref, mov;
    DeviceImage ref_image, mov_image;
    DeviceMiSearch search;
    PreparedSearch(const BinImage& r, const BinImage& m, const MiSearchParams& p, const std::string& strategy, int gpu)
        : ref_image((select_device(gpu), require_same_size(r, m, p), DeviceImage{nullptr, r.width, r.height})),
          mov_image{nullptr, m.width, m.height}, search(p, strategy, gpu) {
        upload(ref, r, s);
        upload(mov, m, s);
        ref_image.data = ref.get();
        mov_image.data = mov.get();
    }
    MiPeak run(std::vector<double>* map = nullptr, std::vector<std::uint32_t>* histograms = nullptr,
               std::vector<BinMoments>* moments = nullptr) {
        return search.search(ref_image, mov_image, s, map, histograms, moments);
    }
};
}  // namespace

std::vector<std::uint32_t> joint_histograms(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                            const std::string& strategy, int gpu) {
    std::vector<std::uint32_t> h;
    PreparedSearch(ref, mov, p, strategy, gpu).run(nullptr, &h);
    return h;
}

std::vector<BinMoments> cr_moments(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                   const std::string& strategy, int gpu) {
    std::vector<BinMoments> m;
    PreparedSearch(ref, mov, p, strategy, gpu).run(nullptr, nullptr, &m);
    return m;
}

std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                           const std::string& strategy, int gpu) {
    std::vector<double> map;
    PreparedSearch(ref, mov, p, strategy, gpu).run(&map);
    return map;
}

MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, const std::string& strategy,
                 int gpu) {
    return PreparedSearch(ref, mov, p, strategy, gpu).run();
}

std::vector<MiPeak> mi_search_windows(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                      const std::vector<WindowCorner>& corners, const std::string& strategy,
                                      int windows_per_launch, int gpu) {
    PreparedSearch ps(ref, mov, p, strategy, gpu);
    if (windows_per_launch > 0) ps.search.limit_windows_per_launch(windows_per_launch);
    return ps.search.search(ps.ref_image, ps.mov_image, corners, ps.s);
}

std::vector<std::string> strategies(const MiSearchParams& p, int gpu) {
    select_device(gpu);
    return available_strategies(p, gpu);
}

std::string describe_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                            const std::string& strategy, int gpu) {
    PreparedSearch ps(ref, mov, p, strategy, gpu);
    ps.run();
    const std::string a = ps.search.adaptive_summary();
    return ps.search.policy().describe() + (a.empty() ? "" : "; " + a);
}

double time_search_ms(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, const std::string& strategy,
                      int repeats, int gpu) {
    PreparedSearch ps(ref, mov, p, strategy, gpu);
    ps.run();  // warm-up: module load, first-touch
    std::vector<double> ms(std::max(1, repeats));
    const SearchWindow& w = p.window;
    for (double& t : ms) t = timed_search_ms(ps.search, ps.ref_image, ps.mov_image, {w.x, w.y, w.z}, ps.s);
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2];
}

}  // namespace stackalign::cuda
