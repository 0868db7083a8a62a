// `bench loads CONFIG`: the per-call cost of the pair searcher's steps on
// CONFIG's plan and frames, each repeated over the series' first views:
// a frame's mean (the fill of a warped view), a load as read, a stretched
// load, a search and a refinement. Their sum per pair, against run.json's
// per-stage seconds, says how much of a stage is the searcher and how much
// the pipeline around it (issue #19: the GPU machine has no nsys).
#include "loads.hpp"

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "../kernels/cuda_api.hpp"
#include "../kernels/pair_searcher.hpp"
#include "../pipelines/plan/stack_plan.hpp"
#include "../pipelines/stages/coarse_to_fine.hpp"
#include "../pipelines/stages/preprocess.hpp"
#include "../src/alignment/apply.hpp"
#include "../src/alignment/tilt_geometry.hpp"
#include "../src/config/config.hpp"
#include "../src/io/stack_io.hpp"

namespace stackalign::bench {
namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

void loads(const std::string& config) {
    const StackPlan plan = plan_stack(load_config(config), RunOptions{});
    FrameReader frames(plan.files, std::size_t(1) << 32);
    // As the job keeps them (pipelines/stack.cpp).
    if (plan.device.backend == Backend::cuda) frames.lock_kept_pages(gpu_page_locking(plan.device.gpu));
    const int n = std::min(plan.frames, 40);
    std::vector<std::shared_ptr<const RawFrame>> views;
    const auto t_read = Clock::now();
    for (int k = 0; k < n; ++k) views.push_back(frames.read(k));
    const double read_ms = ms_since(t_read) / n;
    // As the job's searchers are made: coarse to fine where the plan bins the search.
    auto searcher = make_pairs_searcher(plan, plan.device, SearcherPriority::first);
    std::printf("## Searcher steps, %s\n\n%s; %d views of %dx%d %s\n\n| step | ms per call |\n|---|---|\n",
                config.c_str(), searcher->describe().c_str(), n, plan.width, plan.height, to_string(plan.type).c_str());
    std::printf("| FrameReader::read (first time: decoding) | %.3f |\n", read_ms);
    searcher->load(0, *views[0]);  // warm-up: allocations, module load
    searcher->load(1, *views[1]);
    searcher->refine(0, 1, searcher->search(0, 1, {}));

    auto per_call = [&](const char* step, auto&& f) {
        const auto t = Clock::now();
        for (int k = 1; k < n; ++k) f(k);
        const double ms = ms_since(t) / (n - 1);
        std::printf("| %s | %.3f |\n", step, ms);
        return ms;
    };
    double fill = 0;
    per_call("frame.mean() (host)", [&](int k) { fill += views[k]->mean(); });
    per_call("frame_problem (host)", [&](int k) { fill += double(frame_problem(*views[k]).size()); });
    if (plan.coarse_bin() > 1)
        per_call("block_mean (host, the coarse level's input)",
                 [&](int k) { fill += double(block_mean(*views[k], plan.coarse_bin()).bytes.size() > 0); });
    const double cx = (plan.width - 1) / 2.0, cy = (plan.height - 1) / 2.0;
    const Stretch st = cosine_stretch(0, 30, plan.tilt_axis);
    const LinearTransform stretch{st.s[0], st.s[1], st.s[2], st.s[3], 0, 0, cx, cy};
    per_call("load (as read)", [&](int k) { searcher->load(k % 2, *views[k]); });
    per_call("load_warped (stretched by cos 30 deg)", [&](int k) { searcher->load_warped(k % 2, *views[k], stretch, 0); });
    MiPeak peak;
    searcher->load(0, *views[0]);
    per_call("search (one pair)", [&](int k) {
        searcher->load(1, *views[k]);
        peak = searcher->search(0, 1, {});
    });
    per_call("refine (one pair)", [&](int) { searcher->refine(0, 1, peak); });
    // The job runs several searchers on one GPU at once (plan.searchers),
    // each in a thread of its own: what a stretched load costs each of them then.
    {
        const int at_once = std::max(plan.searchers, 1);
        std::vector<std::unique_ptr<PairSearcher>> others;
        for (int w = 0; w < at_once; ++w) others.push_back(make_pairs_searcher(plan, plan.device, SearcherPriority::normal));
        for (auto& o : others) o->load_warped(0, *views[0], stretch, 0);  // allocations
        const auto t = Clock::now();
        std::vector<std::thread> threads;
        for (int w = 0; w < at_once; ++w)
            threads.emplace_back([&, w] {
                if (plan.device.backend == Backend::cuda) cuda::select_device(plan.device.gpu);
                for (int k = 1; k < n; ++k) others[w]->load_warped(k % 2, *views[k], stretch, 0);
            });
        for (std::thread& th : threads) th.join();
        std::printf("| load_warped, %d searchers at once (each call) | %.3f |\n", at_once, ms_since(t) / (n - 1));
    }
    std::printf("\n(the search row includes a load as read; fill checksum %.1f)\n", fill);
}

}  // namespace stackalign::bench
