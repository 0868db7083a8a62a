#include "backend_cost.hpp"

#include <algorithm>
#include <cstdio>

#include "../../kernels/refine/refine.hpp"
#include "stack_plan.hpp"

namespace stackalign {
namespace {

// Per CPU thread, measured on the H100 host's 16 cores and on a 2-core
// machine (docs/benchmarks.md, `bench stages`): window search 4e8
// pair-updates/s (tilt series: 6.7e10 in 11 s on 16 threads; X-ray-sized on
// 2 cores: 1.9e9 in 1.74 s); continuous refinement 1.5e7 pixel histograms/s
// (measured with 75 Parzen histograms of the window per pair: tilt series 4.1e9 in 16.6 s
// on 16, HAADF sample 2.2e7 in 0.097 s on 16); preprocessing 1.6e6 pixels/s
// per load (stretching, filters and refinement features: tilt series 359
// loads of 512^2 in 3.7 s on 16).
constexpr double kCpuSearchRate = 4e8, kCpuRefineRate = 1.5e7, kCpuPreprocessRate = 1.6e6;
// The GPU, beside its start (kCudaStartSeconds): about 1 ms of launches and
// waits per search and its refinement, shared by the searchers at once
// (HAADF sample: 180 searches in 0.18 s of stages, one searcher); and rates
// two to three orders above the CPU's.
constexpr double kCudaPerSearch = 1e-3, kCudaSearchRate = 5e11, kCudaRefineRate = 1e10,
                 kCudaPreprocessRate = 2e9;

}  // namespace

BackendEstimate estimate_backends(const StackPlan& plan, int threads, int searchers) {
    BackendEstimate e;
    e.cpu_threads = std::max(1, threads);
    // Rotation, bitmap projections and projection matching have other costs
    // (and CPU paths 6-25x slower than the GPU on every job measured).
    if (!plan.motion.translation_only() || plan.setup.method != SearchMethod::window || plan.projection.on) return e;
    e.modelled = true;
    const double pairs = double(plan.kept.size()) - 1;
    const double skips = plan.solve == OffsetSolve::least_squares ? std::max(0.0, pairs - 1) : 0.0;
    const double searches = pairs + skips + (plan.stretch_auto ? pairs : 0.0);
    const MiSearchParams& s = plan.setup.search;
    // Coarse to fine: the range on bin^2 fewer shifts of bin^2 fewer pixels,
    // then 25 full-resolution shifts (and a move of them now and then), each
    // a launch of its own on the GPU.
    const double b2 = double(plan.coarse_bin) * plan.coarse_bin;
    const double shifts = plan.coarse_bin > 1 ? double(s.candidates()) / (b2 * b2) + 30.0 : double(s.candidates());
    const double launches = plan.coarse_bin > 1 ? 3.0 : 1.0;
    const double updates = searches * shifts * double(s.window.width) * s.window.height;
    const double refined = plan.setup.subpixel == Subpixel::continuous
                               ? (pairs + skips) * refine_evaluations(2) * double(s.window.width) * s.window.height
                               : 0.0;
    // Loads: each view once, its stretched copies (one per pair, two with
    // "auto", which also searches as read), a few shifted skip copies.
    const double loads = double(plan.kept.size()) * (1.2 + (plan.stretch ? 1.0 : 0.0) + (plan.stretch_auto ? 1.0 : 0.0));
    const double pixels = loads * double(plan.width) * plan.height;
    const double t = e.cpu_threads;
    e.cpu_seconds = updates / (kCpuSearchRate * t) + refined / (kCpuRefineRate * t) + pixels / (kCpuPreprocessRate * t);
    e.cuda_seconds = kCudaStartSeconds + searches * launches * kCudaPerSearch / std::max(1, searchers) + updates / kCudaSearchRate +
                     refined / kCudaRefineRate + pixels / kCudaPreprocessRate;
    return e;
}

std::string describe_choice(const BackendEstimate& e, bool cpu_chosen) {
    char line[240];
    std::snprintf(line, sizeof line, "%s (auto: estimated %.2f s on %d CPU threads, %.2f s on the GPU with its start%s)",
                  cpu_chosen ? "cpu" : "cuda", e.cpu_seconds, e.cpu_threads, e.cuda_seconds,
                  e.gpu_asked ? "" : "; less than the GPU's start, so no GPU was looked for");
    return line;
}

}  // namespace stackalign
