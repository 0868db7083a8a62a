#include "pair_confidence.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>

#include "../../kernels/cuda_api.hpp"
#include "../../src/core/interrupt.hpp"
#include "../../src/core/workers.hpp"
#include "preprocess.hpp"

namespace stackalign {

namespace {
template <typename Pixel>
void reverse_pixels(const RawFrame& frame, RawFrame& out) {
    const Pixel* in = reinterpret_cast<const Pixel*>(frame.bytes.data());
    std::reverse_copy(in, in + frame.pixel_count(), reinterpret_cast<Pixel*>(out.bytes.data()));
}
}  // namespace

void turn_half_way(const RawFrame& frame, RawFrame& out) {
    out.type = frame.type, out.width = frame.width, out.height = frame.height, out.depth = frame.depth;
    out.bytes.resize(frame.bytes.size());  // kept between calls: no new pages to fault in per view
    // By the pixel's size, not byte by byte: a 4096^2 uint16 view took 48 ms
    // one pixel's bytes at a time (copy_n of a run-time count), 1.5 ms so.
    switch (bytes_per_pixel(frame.type)) {
    case 1: reverse_pixels<std::uint8_t>(frame, out); break;
    case 2: reverse_pixels<std::uint16_t>(frame, out); break;
    default: reverse_pixels<std::uint32_t>(frame, out); break;  // every 4-byte type
    }
}

RawFrame turned_half_way(const RawFrame& frame) {
    RawFrame out;
    turn_half_way(frame, out);
    return out;
}

NullLattice null_lattice(const ShiftRange& range) {
    auto half = [](int m) { return std::max(1, sharpness_step(m) / 2); };
    const ShiftStep step{half(range.x), half(range.y), half(range.z)};
    return {ShiftRange{range.x / step.x, range.y / step.y, range.z / step.z}, step};
}

NullSearch null_search(const SearchSetup& pairs, int width, int height) {
    NullSearch out{pairs, PixelSample{}, null_lattice(pairs.search.max_shift)};
    out.setup.subpixel = Subpixel::off;  // peaks only
    const SearchWindow& w = pairs.search.window;
    const NullLattice& l = out.lattice;
    const bool large = w.depth == 1 && pairs.search.window_pixels() >= kSampledNullPixels;
    if (pairs.method != SearchMethod::window || !large || l.step.x % 2 || l.step.y % 2) return out;
    NullSearch sampled = out;
    sampled.sample = PixelSample{2, w.x % 2, w.y % 2};
    sampled.lattice.step = ShiftStep{l.step.x / 2, l.step.y / 2, 1};
    MiSearchParams& p = sampled.setup.search;
    p.window = SearchWindow{w.x / 2, w.y / 2, 0, (w.width + 1) / 2, (w.height + 1) / 2, 1};
    p.max_shift = ShiftRange{l.reach.x * sampled.lattice.step.x, l.reach.y * sampled.lattice.step.y, 0};
    p.centre = IntShift{};
    // A window at the frame's edge with an odd corner can leave the sample's frame by a pixel.
    if (!window_overflow(p, sampled.sample.width(width), sampled.sample.height(height)).empty()) return out;
    return sampled;
}

namespace {
// The best chance score: over the null lattice (search_near, the same
// candidates' scores on either backend), or the whole range where the
// method has no near search.
double null_peak(PairSearcher& searcher, const NullSearch& null) {
    if (null.setup.method != SearchMethod::window) return searcher.search(0, 1).mi;
    const NullLattice& l = null.lattice;
    return searcher.search_near(0, 1, IntShift{}, l.reach, IntShift{}, l.step).mi;
}
}  // namespace

double confidence_from(double peak_mi, double null_mi) {
    if (!(peak_mi > 0)) return 0.0;
    return std::clamp(1.0 - null_mi / peak_mi, 0.0, 1.0);
}

void weigh_pairs_against_chance(const StackPlan& plan, FrameReader& frames, PairSearch& search, ChanceScores& chance,
                                StageTimes& times, Verbosity verbosity) {
    if (plan.flags.min_confidence <= 0) return;  // not asked for: no null searches
    const auto start = Clock::now();
    auto usable = [&](const PairResult& p) {
        return !search.frame_problems.count(p.ref) && !search.frame_problems.count(p.mov);
    };
    // One task per reference view: its pair and skip share the loaded reference.
    std::map<int, std::vector<int>> wanted;
    for (const std::vector<PairResult>* list : {&search.pairs, &search.skips})
        for (const PairResult& p : *list)
            if (usable(p) && !chance.count({p.ref, p.mov})) wanted[p.ref].push_back(p.mov);
    std::vector<std::pair<int, std::vector<int>>> tasks(wanted.begin(), wanted.end());
    std::vector<std::vector<double>> found(tasks.size());
    const NullSearch null = null_search(plan.setup, plan.width, plan.height);
    if (!tasks.empty()) {
        ReadViews views(frames);
        const int workers = std::max(1, std::min<int>(plan.searchers, int(tasks.size())));
        std::atomic<std::size_t> next{0};
        const LoadOptions peaks_only{false, false, null.sample};
        run_workers(workers, [&](int) {
            if (plan.device.backend == Backend::cuda) cuda::select_device(plan.device.gpu);  // a new thread
            const std::unique_ptr<PairSearcher> searcher = make_pair_searcher(plan.device, null.setup);
            RawFrame turned;
            cuda::PagesLocked turned_locked;  // as the frames kept (FrameReader::lock_kept_pages)
            for (std::size_t k; (k = next++) < tasks.size();) {
                throw_if_interrupted();
                searcher->load(0, *views.read(tasks[k].first), peaks_only);
                for (int mov : tasks[k].second) {
                    turn_half_way(*views.read(mov), turned);
                    if (plan.device.backend == Backend::cuda) turned_locked.hold(turned.bytes, plan.device.gpu);
                    searcher->load(1, turned, peaks_only);
                    found[k].push_back(null_peak(*searcher, null));
                }
            }
        });
    }
    for (std::size_t k = 0; k < tasks.size(); ++k)
        for (std::size_t j = 0; j < tasks[k].second.size(); ++j) chance[{tasks[k].first, tasks[k].second[j]}] = found[k][j];
    for (std::vector<PairResult>* list : {&search.pairs, &search.skips})
        for (PairResult& p : *list) {
            const auto c = chance.find({p.ref, p.mov});
            p.null_mi = c == chance.end() ? std::nan("") : c->second;
            p.confidence = c == chance.end() ? std::nan("") : confidence_from(p.peak.mi, c->second);
        }
    const double seconds = seconds_since(start);
    times.search += seconds;
    if (!tasks.empty()) {
        char line[200];
        std::snprintf(line, sizeof line, "pairs weighed against chance (each against its moving view turned by 180 degrees%s): %.2f s",
                      null.sample.stride > 1 ? ", on every 2nd pixel of every 2nd row" : "",
                      seconds);
        log_line(verbosity, line);
    }
}

}  // namespace stackalign
