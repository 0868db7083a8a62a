#include "search_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include "../../src/alignment/tilt_geometry.hpp"
#include "../../src/core/interrupt.hpp"
#include "preprocess.hpp"
#include "refine.hpp"

namespace stackalign {
namespace {

// The pairs one searcher takes, in the order it takes them.
struct Run {
    int gpu = 0;
    std::vector<int> pairs;
};

std::vector<Run> split_pairs(const StackPlan& plan, int pairs) {
    const bool spread = plan.gpus.size() > 1 && !plan.stretch && plan.kept.size() > 2;
    if (!spread) {
        // Outward from the reference: right of it ascending, then left of it descending.
        const int r = int(std::find(plan.kept.begin(), plan.kept.end(), plan.reference) - plan.kept.begin());
        Run run{plan.device.gpu, {}};
        for (int i = r; i < pairs; ++i) run.pairs.push_back(i);
        for (int i = r - 1; i >= 0; --i) run.pairs.push_back(i);
        return {run};
    }
    const int workers = std::min<int>(int(plan.gpus.size()), pairs);
    std::vector<Run> runs(workers);
    for (int w = 0; w < workers; ++w) {
        runs[w].gpu = plan.gpus[w];
        for (int i = pairs * w / workers; i < pairs * (w + 1) / workers; ++i) runs[w].pairs.push_back(i);
    }
    return runs;
}

class RunSearcher {
public:
    RunSearcher(const StackPlan& plan, FrameReader& frames, int gpu)
        : plan_(plan), searcher_(make_pair_searcher({plan.device.backend, gpu}, plan.setup)), views_(*searcher_, frames),
          placed_(plan.frames) {}

    PairSearcher& searcher() { return *searcher_; }
    double preprocess_seconds() const { return views_.seconds; }
    const std::map<int, std::string>& frame_problems() const { return views_.problems; }
    double search_seconds = 0, refine_seconds = 0;

    void search(int i, PairResult& pr) {
        const StackPlan& plan = plan_;
        const int r = int(std::find(plan.kept.begin(), plan.kept.end(), plan.reference) - plan.kept.begin());
        pr.ref = plan.kept[i];
        pr.mov = plan.kept[i + 1];
        const bool right = i >= r;
        const int near = right ? pr.ref : pr.mov, far = right ? pr.mov : pr.ref;
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
        const int ref_slot = views_.prepare({pr.ref, stretched == pr.ref ? i : -1}, -1, about);
        const int mov_slot = views_.prepare({pr.mov, stretched == pr.mov ? i : -1}, ref_slot, about);
        const auto t = Clock::now();
        pr.peak = searcher_->search(ref_slot, mov_slot);
        search_seconds += seconds_since(t);
        const auto t_refine = Clock::now();
        pr.measured = refine_shift(*searcher_, ref_slot, mov_slot, pr.peak, plan.setup.subpixel);
        refine_seconds += seconds_since(t_refine);
        Shift s = pr.measured;
        if (stretched == far) st.unstretch(s.dx, s.dy);
        pr.shift = Transform::translation(s);
        placed_[far] = right ? Shift{placed_[near].dx + s.dx, placed_[near].dy + s.dy}
                             : Shift{placed_[near].dx - s.dx, placed_[near].dy - s.dy};
    }

private:
    const StackPlan& plan_;
    std::unique_ptr<PairSearcher> searcher_;
    PreparedViews views_;
    std::vector<Shift> placed_;  // offsets of views already chained to the reference
};

}  // namespace

PairSearch search_pairs(const StackPlan& plan, FrameReader& frames, StageTimes& times, Verbosity verbosity) {
    const int pairs = int(plan.kept.size()) - 1;
    const std::vector<Run> runs = split_pairs(plan, pairs);
    const int workers = int(runs.size());
    PairSearch out;
    out.pairs.resize(pairs);
    std::vector<std::exception_ptr> errors(workers);
    std::vector<double> pre(workers, 0), search(workers, 0), refine(workers, 0);
    std::vector<std::string> described(workers);
    std::vector<std::map<int, std::string>> problems(workers);
    std::mutex lock;
    Progress progress("pairs", pairs, verbosity);
    int finished = 0;
    auto work = [&](int w) {
        try {
            RunSearcher run(plan, frames, runs[w].gpu);
            if (workers == 1) {
                out.backend_description = run.searcher().describe();
                log_line(verbosity, "backend: " + out.backend_description);
            }
            for (int i : runs[w].pairs) {
                throw_if_interrupted();
                run.search(i, out.pairs[i]);
                if (workers == 1 && finished == 0 && run.searcher().describe() != out.backend_description) {
                    out.backend_description = run.searcher().describe();  // a strategy auto-tuned on this pair
                    log_line(verbosity, "backend: " + out.backend_description);
                }
                const std::lock_guard<std::mutex> hold(lock);
                progress.step(++finished);
            }
            pre[w] = run.preprocess_seconds();
            search[w] = run.search_seconds;
            refine[w] = run.refine_seconds;
            described[w] = run.searcher().describe();
            problems[w] = run.frame_problems();
        } catch (...) {
            errors[w] = std::current_exception();
        }
    };
    if (workers == 1) {
        work(0);
    } else {
        std::vector<std::thread> threads;
        for (int w = 0; w < workers; ++w) threads.emplace_back(work, w);
        for (std::thread& t : threads) t.join();
    }
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    progress.finish();
    for (int w = 0; w < workers; ++w) {
        times.preprocess += pre[w];  // summed over the GPUs
        times.search += search[w];
        times.refine += refine[w];
        for (const auto& [view, problem] : problems[w])
            if (!problem.empty()) out.frame_problems[view] = problem;
    }
    for (const auto& [view, problem] : out.frame_problems)
        log_line(verbosity, "warning: frame " + std::to_string(view) + " (" + plan.files[0] +
                                (plan.files.size() > 1 ? " ..." : "") + "): " + problem +
                                "; the pairs it belongs to have nothing to align");
    if (workers > 1) {
        out.backend_description = std::to_string(workers) + " GPUs, pairs split between them; GPU " +
                                  std::to_string(runs[0].gpu) + ": " + described[0];
        log_line(verbosity, "backend: " + out.backend_description);
    }
    return out;
}

}  // namespace stackalign
