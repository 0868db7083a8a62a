#include "search_pairs.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "../../kernels/cuda_api.hpp"
#include "../../src/alignment/solve_offsets.hpp"
#include "../../src/alignment/tilt_geometry.hpp"
#include "../../src/core/interrupt.hpp"
#include "../../src/core/workers.hpp"
#include "coarse_to_fine.hpp"
#include "pair_tasks.hpp"
#include "preprocess.hpp"
#include "refine.hpp"
#include "search_motion.hpp"

namespace stackalign {
namespace {

// Neighbouring views whose cosines differ by more than this (about 84 deg
// and beyond in 2-deg steps) are far from what stretching models well.
constexpr double kSlabStretchLimit = 1.5;

class RunSearcher {
public:
    // `placed`: the places of the views chained to the reference, the
    // searcher's own or shared with other searchers of the same chains.
    RunSearcher(const StackPlan& plan, ReadViews& read, int gpu, const KnownPairs& known, std::vector<Shift>& placed,
                SearcherPriority priority)
        : plan_(plan), views_read_(read), device_{plan.device.backend, gpu},
          searcher_(make_pairs_searcher(plan, device_, priority)), views_(*searcher_, read), known_(known),
          placed_(placed) {}

    PairSearcher& searcher() { return *searcher_; }
    double preprocess_seconds() const { return views_.seconds + (coarse_views_ ? coarse_views_->seconds : 0.0); }
    double reading_seconds() const {
        return views_.reading_seconds + (coarse_views_ ? coarse_views_->reading_seconds : 0.0);
    }
    int loads() const { return views_.loads + (coarse_views_ ? coarse_views_->loads : 0); }
    double search_seconds = 0, refine_seconds = 0;
    // Pairs this searcher searched itself (not taken from `known`).
    int searched() const { return searched_; }

    // `neighbours`: the finished neighbour pairs, for a skip pair's prediction.
    void search(const PairTask& task, PairResult& pr, const std::vector<PairResult>& neighbours) {
        const StackPlan& plan = plan_;
        const int r = plan.kept_reference();
        const int i = task.from;
        pr.ref = plan.kept[i];
        pr.mov = plan.kept[i + task.step];
        if (!plan.motion.translation_only()) {
            ++searched_;
            // Unstretched (the plan refuses stretching with rotation).
            MotionSearchTimes t;
            const int bin = coarse_bin(plan.width, plan.height);
            if (bin > 1 && !coarse_searcher_) {
                coarse_searcher_ = make_pair_searcher(device_, coarse_setup(plan.setup, bin, plan.width, plan.height));
                coarse_views_ = std::make_unique<PreparedViews>(*coarse_searcher_, views_read_);
            }
            const MotionLevel fine{*searcher_, views_, 1};
            const MotionLevel coarse{bin > 1 ? *coarse_searcher_ : *searcher_, bin > 1 ? *coarse_views_ : views_, bin};
            if (task.step == 2)
                search_motion_skip(plan, fine, neighbours[i].shift.then(neighbours[i + 1].shift), pr, t);
            else
                search_motion_pair(plan, fine, bin > 1 ? &coarse : nullptr, pr, t);
            search_seconds += t.search;
            refine_seconds += t.refine;
            return;
        }
        // A stretched view in a slot is told apart by the pair it was stretched for.
        const int pair_id = task.step == 1 ? i : int(plan.kept.size()) + i;
        const bool right = i >= r;
        const int near = right ? pr.ref : pr.mov, far = right ? pr.mov : pr.ref;
        const PairResult* prior = known(pr, task.step);
        if (prior && known_.refined && prior->refined) {
            pr = *prior;
            if (task.step == 1) place(right, near, far, pr.shift.offset());
            return;
        }
        ++searched_;
        Stretch st;
        int stretched = -1;
        if (plan.stretch) {
            const bool ref_lower = std::fabs(plan.angles[pr.ref]) <= std::fabs(plan.angles[pr.mov]);
            const int low = ref_lower ? pr.ref : pr.mov, high = ref_lower ? pr.mov : pr.ref;
            st = cosine_stretch(plan.angles[low], plan.angles[high], plan.tilt_axis);
            if (!st.identity()) {
                stretched = high;
                pr.stretch = std::cos(plan.angles[low] * M_PI / 180) / std::cos(plan.angles[high] * M_PI / 180);
            }
        }
        const double cx = (plan.width - 1) / 2.0, cy = (plan.height - 1) / 2.0;
        const LinearTransform about{st.s[0], st.s[1], st.s[2], st.s[3], 0, 0, cx + placed_[near].dx, cy + placed_[near].dy};
        std::optional<MiPeak> found;
        if (prior && task.step == 1) found = prior->peak;
        // A skip pair is searched around its neighbours' sum (place_skip).
        // Stretched pairs are searched as they are.
        SkipPlacement skip;
        if (task.step == 2 && stretched < 0)
            skip = place_skip(plan, neighbours[i].shift.dx + neighbours[i + 1].shift.dx,
                              neighbours[i].shift.dy + neighbours[i + 1].shift.dy);
        const IntShift& centre = skip.centre;
        const int px = skip.shift_x, py = skip.shift_y;
        if (prior && task.step == 2 && same_placement(skip, known_skip_placement(*prior))) found = prior->peak;
        // The views are loaded only for what needs them: the search where
        // no peak is known, the refinement where it is made.
        int ref_slot = -1, mov_slot = -1;
        auto load = [&] {
            ref_slot = views_.prepare({pr.ref, stretched == pr.ref ? pair_id : -1}, -1, about);
            mov_slot = views_.prepare({pr.mov, stretched == pr.mov ? pair_id : -1, px, py}, ref_slot, about);
        };
        if (!found) {
            load();
            const auto t = Clock::now();
            found = searcher_->search(ref_slot, mov_slot, centre);
            search_seconds += seconds_since(t);
        }
        pr.peak = *found;
        if (task.step != 1) {
            // A skip whose peak is on the edge of the range around the
            // prediction disagrees with it by at least the range.
            const ShiftRange& m = plan.setup.search.max_shift;
            pr.off_prediction = std::abs(pr.peak.dx) >= m.x || std::abs(pr.peak.dy) >= m.y;
            pr.refined = !known_.triplets_only || skip_weighs_triplet(plan, pr);
        }
        if (pr.refined && ref_slot < 0) load();
        const auto t_refine = Clock::now();
        pr.measured = refine_shift(*searcher_, ref_slot, mov_slot, pr.peak, pr.refined ? plan.setup.subpixel : Subpixel::off);
        refine_seconds += seconds_since(t_refine);
        pr.measured.dx += px;
        pr.measured.dy += py;
        Shift s = pr.measured;
        if (stretched == far) st.unstretch(s.dx, s.dy);
        pr.shift = Transform::translation(s);
        if (task.step == 1) place(right, near, far, s);
    }

private:
    // The result `known_` has for the pair of these views and step, or nullptr.
    const PairResult* known(const PairResult& pr, int step) const {
        // A stretched view is stretched about where the chain placed its
        // neighbour, which the refinement moves: its peak is not the other
        // search's to give.
        if (!known_.refined && plan_.stretch) return nullptr;
        // A view the other search could not align would lose its warning here.
        if (!known_.found || !known_.found->frame_problems.empty()) return nullptr;
        for (const PairResult& k : step == 1 ? known_.found->pairs : known_.found->skips)
            if (k.ref == pr.ref && k.mov == pr.mov) return &k;
        return nullptr;
    }
    // Where the known skip pair `k` was searched: about its known neighbours' sum.
    SkipPlacement known_skip_placement(const PairResult& k) const {
        const std::vector<PairResult>& pairs = known_.found->pairs;
        const std::size_t t = std::size_t(&k - known_.found->skips.data());
        return place_skip(plan_, pairs[t].shift.dx + pairs[t + 1].shift.dx, pairs[t].shift.dy + pairs[t + 1].shift.dy);
    }
    static bool same_placement(const SkipPlacement& a, const SkipPlacement& b) {
        return a.centre.x == b.centre.x && a.centre.y == b.centre.y && a.centre.z == b.centre.z &&
               a.shift_x == b.shift_x && a.shift_y == b.shift_y;
    }
    // The far view of a neighbour pair placed from its near one by the pair's offset `s`.
    void place(bool right, int near, int far, const Shift& s) {
        placed_[far] = right ? Shift{placed_[near].dx + s.dx, placed_[near].dy + s.dy}
                             : Shift{placed_[near].dx - s.dx, placed_[near].dy - s.dy};
    }

    const StackPlan& plan_;
    ReadViews& views_read_;
    Device device_;
    std::unique_ptr<PairSearcher> searcher_;
    PreparedViews views_;
    // Rigid and similarity searches of large frames: their coarse level.
    std::unique_ptr<PairSearcher> coarse_searcher_;
    std::unique_ptr<PreparedViews> coarse_views_;
    const KnownPairs& known_;
    int searched_ = 0;
    std::vector<Shift>& placed_;  // offsets of views already chained to the reference
};

// The views decoded, checked and averaged (ReadViews) on threads of their
// own, in the order the searchers will ask for them, so that the searchers
// find them ready: decoding a 512^2 float32 view took 0.72 ms on the H100
// host, more than its 0.31 ms load on the GPU (docs/benchmarks.md); on 2
// cores the CPU's tilt series gained 0.3-0.4 s and no job lost. One thread
// per 4 cores, at most 4: through one, the standard job's chains waited
// 0.03-0.06 s each for views (run.json "searchers", H200 host). Only where
// the whole series stays in the frame cache (otherwise the work would be
// thrown away). Errors are left for the searcher that reads the view.
class ReadAhead {
public:
    ReadAhead(const StackPlan& plan, const std::vector<Run>& runs, FrameReader& frames, ReadViews& views) {
        const std::size_t frame_bytes = std::size_t(plan.width) * plan.height * bytes_per_pixel(plan.type);
        if (!frames.keeps(plan.frames, frame_bytes)) return;
        std::vector<bool> listed(plan.frames, false);
        auto add = [&](int view) {
            if (!listed[view]) listed[view] = true, order_.push_back(view);
        };
        for (std::size_t k = 0;; ++k) {
            bool any = false;
            for (const Run& run : runs)
                if (k < run.tasks.size()) {
                    const PairTask& t = run.tasks[k];
                    add(plan.kept[t.from]);
                    add(plan.kept[t.from + t.step]);
                    any = true;
                }
            if (!any) break;
        }
        const int readers = std::clamp(int(std::thread::hardware_concurrency()) / 4, 1, 4);
        for (int k = 0; k < readers; ++k)
            threads_.emplace_back([this, &views] {
                for (std::size_t i = next_++; i < order_.size() && !stop_; i = next_++) {
                    try {
                        views.mean(order_[i]);
                    } catch (...) {  // the searcher that reads this view says what is wrong with it
                    }
                }
            });
    }
    ~ReadAhead() {
        stop_ = true;
        for (std::thread& t : threads_) t.join();
    }

private:
    std::vector<int> order_;
    std::atomic<std::size_t> next_{0};
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
};

}  // namespace

bool skip_weighs_triplet(const StackPlan& plan, const PairResult& skip) {
    return !(skip.off_prediction || skip.peak.sharpness() < plan.flags.min_sharpness);
}

SkipPlacement place_skip(const StackPlan& plan, double dx, double dy) {
    SkipPlacement s;
    s.centre = {int(std::lround(dx)), int(std::lround(dy)), 0};
    MiSearchParams around = plan.setup.search;
    around.centre = s.centre;
    if (plan.setup.method != SearchMethod::window || !window_overflow(around, plan.width, plan.height).empty()) {
        s.shift_x = s.centre.x, s.shift_y = s.centre.y;
        s.centre = IntShift{};
    }
    return s;
}

std::vector<int> usable_views(const StackPlan& plan, const PairSearch& found) {
    std::vector<int> used;
    for (int v : plan.kept)
        if (!found.frame_problems.count(v)) used.push_back(v);
    return used;
}

double TripletSums::rms() const { return used ? std::sqrt(squares / used) : std::nan(""); }

TripletSums triplet_sums(const StackPlan& plan, const PairSearch& found, const std::vector<bool>* pair_done,
                         const std::vector<bool>* skip_done) {
    TripletSums s;
    for (std::size_t t = 0; t < found.skips.size(); ++t) {
        if (pair_done && !((*skip_done)[t] && (*pair_done)[t] && (*pair_done)[t + 1])) continue;
        const PairResult& skip = found.skips[t];
        if (!skip_weighs_triplet(plan, skip)) continue;
        const double d = triplet_inconsistency(found.pairs[t].shift, found.pairs[t + 1].shift, skip.shift,
                                               plan.flags.half_width, plan.flags.half_height);
        if (!std::isfinite(d)) continue;
        s.squares += d * d;
        ++s.used;
    }
    return s;
}

PairSearch search_pairs(const StackPlan& plan, FrameReader& frames, StageTimes& times, Verbosity verbosity,
                        const KnownPairs& known, const StopWhen& stop_when) {
    const int pairs = int(plan.kept.size()) - 1;
    const int skips = plan.solve == OffsetSolve::least_squares ? std::max(0, pairs - 1) : 0;
    const std::vector<Run> runs = split_pairs(plan, pairs, skips);
    const int workers = int(runs.size());
    PairSearch out;
    out.pairs.resize(pairs);
    out.skips.resize(skips);
    out.searchers.resize(workers);
    std::vector<std::string> described(workers);
    std::vector<int> searched_by(workers, 0);
    ReadViews views(frames);
    const ReadAhead ahead(plan, runs, frames, views);
    Progress progress("pairs", pairs + skips, verbosity);
    PairBoard board(runs, pairs, skips, !plan.stretch);
    // After the last task there is nothing left to spare: the search is whole.
    const PairBoard::Check check = [&](const std::vector<bool>& pair_done, const std::vector<bool>& skip_done, int finished) {
        progress.step(finished);
        return stop_when && finished < pairs + skips && stop_when(out, pair_done, skip_done);
    };
    // Stretched chains all start at the reference and share their places;
    // other chains each start where their run does (or where they took
    // another's pairs), and place their views for themselves.
    std::vector<Shift> chain_places(plan.stretch ? plan.frames : 0);
    std::vector<std::vector<Shift>> own_places(plan.stretch ? 0 : workers, std::vector<Shift>(plan.frames));
    // Where skip searchers wait on the chains, the chains' work goes first on the GPU.
    const bool skips_wait = std::any_of(runs.begin(), runs.end(), [](const Run& r) { return r.waits; });
    const auto started = Clock::now();
    auto work = [&](int w) {
        if (plan.device.backend == Backend::cuda) cuda::select_device(runs[w].gpu);
        RunSearcher run(plan, views, runs[w].gpu, known, plan.stretch ? chain_places : own_places[w],
                        skips_wait && !runs[w].waits ? SearcherPriority::first : SearcherPriority::normal);
        if (workers == 1) {
            out.backend_description = run.searcher().describe();
            log_line(verbosity, "backend: " + out.backend_description);
        }
        SearcherTimes& own = out.searchers[w];
        const auto run_started = Clock::now();
        while (const std::optional<PairTask> task = board.next(w, own.waiting)) {
            throw_if_interrupted();
            const int searched = run.searched();
            run.search(*task, task->step == 1 ? out.pairs[task->from] : out.skips[task->from], out.pairs);
            ++own.pairs;
            // A strategy is auto-tuned on the first pair searched (not taken from `known`).
            if (workers == 1 && searched == 0 && run.searched() == 1 &&
                run.searcher().describe() != out.backend_description) {
                out.backend_description = run.searcher().describe();  // a strategy auto-tuned on this pair
                log_line(verbosity, "backend: " + out.backend_description);
            }
            board.finish(*task, check);
        }
        own.wall = seconds_since(run_started);
        own.skips_only = runs[w].waits;
        own.loads = run.loads();
        own.reading = run.reading_seconds();
        own.loading = run.preprocess_seconds() - own.reading;
        own.search = run.search_seconds;
        own.refine = run.refine_seconds;
        described[w] = run.searcher().describe();
        searched_by[w] = run.searched();
    };
    // A searcher that fails leaves the others nothing more to do: the skips
    // waiting on its pairs give up, and no other task starts.
    run_workers(workers, [&](int w) {
        try {
            work(w);
        } catch (...) {
            board.close();
            throw;
        }
    });
    progress.finish();
    out.stopped = board.closed();
    // With several searchers at once, the stage's wall time is shared out in
    // proportion to their summed seconds, so the stages still add up to the job.
    double summed = 0;
    for (const SearcherTimes& t : out.searchers) summed += t.reading + t.loading + t.search + t.refine;
    const double scale = workers > 1 && summed > 0 ? seconds_since(started) / summed : 1.0;
    for (int w = 0; w < workers; ++w) {
        const SearcherTimes& t = out.searchers[w];
        times.preprocess += (t.reading + t.loading) * scale;
        out.views_preprocessed += t.loads;
        times.search += t.search * scale;
        times.refine += t.refine * scale;
    }
    out.frame_problems = views.problems();
    if (plan.stretch_ruled_out) log_line(verbosity, "cosine stretch " + plan.stretch_why);
    if (plan.setup.refine_auto && plan.setup.subpixel == Subpixel::continuous) {
        int ncc = 0, inverted = 0, total = 0;
        for (const std::vector<PairResult>* kind : {&out.pairs, &out.skips})
            for (const PairResult& p : *kind)
                if (p.linear_r) {
                    const RefineParams chosen = auto_refinement(plan.setup, *p.linear_r);
                    ++total;
                    ncc += chosen.metric == Metric::ncc;
                    inverted += chosen.ncc_sign < 0;
                }
        log_line(verbosity, "refine metric auto: " + std::to_string(ncc) + " of " + std::to_string(total) +
                                " pairs refined by ncc (" + std::to_string(inverted) + " of them inverted), the rest by " +
                                name_of(plan.setup.refine_metric));
    }
    for (const PairResult& p : out.pairs)
        if (p.stretch > kSlabStretchLimit) {
            char factor[32];
            std::snprintf(factor, sizeof factor, "%.2f", p.stretch);
            log_line(verbosity, "note: pair " + std::to_string(p.ref) + "-" + std::to_string(p.mov) + " stretched by " +
                                    factor + ", more than a thin slab's foreshortening explains well at these tilts");
        }
    for (const auto& [view, problem] : out.frame_problems)
        log_line(verbosity, "warning: frame " + std::to_string(view) + " (" + plan.files[0] +
                                (plan.files.size() > 1 ? " ..." : "") + "): " + problem +
                                "; the pairs it belongs to have nothing to align");
    // Described by the searcher that searched most: one whose pairs were all
    // known tuned nothing. Where every pair was known (a series no longer than
    // the smoothing trial's views), the searches were the other search's.
    const int w = int(std::max_element(searched_by.begin(), searched_by.end()) - searched_by.begin());
    if (known.found && searched_by[w] == 0) {
        out.backend_description = known.found->backend_description;
        log_line(verbosity, "backend: " + out.backend_description);
    } else if (workers > 1 && plan.device.backend == Backend::cuda) {
        const std::size_t gpus = std::max<std::size_t>(plan.gpus.size(), 1);
        out.backend_description = std::to_string(workers) + " searchers on " + std::to_string(gpus) +
                                  (gpus > 1 ? " GPUs" : " GPU") + ", pairs split between them; GPU " +
                                  std::to_string(runs[w].gpu) + ": " + described[w];
        log_line(verbosity, "backend: " + out.backend_description);
    } else if (workers > 1) {
        out.backend_description = std::to_string(workers) + " searchers of " + std::to_string(workers_threads(workers)) +
                                  (workers_threads(workers) > 1 ? " threads" : " thread") +
                                  " each, pairs split between them: " + described[w];
        log_line(verbosity, "backend: " + out.backend_description);
    }
    return out;
}

}  // namespace stackalign
