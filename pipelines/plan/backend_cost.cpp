#include "backend_cost.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>

#include "../../kernels/cuda_api.hpp"
#include "../../kernels/refine/refine.hpp"
#include "stack_plan.hpp"

namespace stackalign {
namespace {

// Per CPU thread, with the CPU's own searchers ([device] searchers =
// "auto"), measured on the 16 cores of the H200 host and the
// H100 host (`bench stages`): window search
// 7e8 pair-updates/s since the dense pass counts without a branch
// (X-ray-sized: 4.8e8 in 0.065-0.071 s where it took 0.085-0.124 before,
// drift: 1.35e9 in 0.096-0.144 s where it took 0.24-0.28);
// continuous refinement 3.5e7 pixel histograms/s (4.7e7 in 0.056-0.065 s,
// 2.0e8 in 0.35 s); preprocessing 3e6 pixels/s per load (stretching,
// filters and refinement features: 5.0e6 in 0.055 s, 5.5e6 in 0.155 s).
// On 2 threads the refinement and the loads run 1.3-2x faster per thread
// than this (their loops scale less than linearly), so the model errs
// towards the GPU there.
constexpr double kCpuSearchRate = 7e8, kCpuRefineRate = 3.5e7, kCpuPreprocessRate = 3e6;
// The GPU, beside its start (kCudaStartSeconds): about 1 ms of launches and
// waits per search and its refinement, shared by the searchers at once
// (HAADF sample: 180 searches in 0.18 s of stages, one searcher); and rates
// two to three orders above the CPU's.
// Landmarks (3D windows, their refinement included), per CPU thread: the
// sample job's 24 points of 21x21x11 voxels over 17x17x9 shifts (3.0e8
// voxel pairs) searched and refined in 0.31-0.39 s on 2 threads and
// 0.060-0.067 s on the H100 host's 16; both volumes preprocessed at about
// 1.3e7 voxels a second a thread (2 x 15 M voxels in 0.13-0.16 s on 16
// threads, 0.68-0.76 s on 2; `bench stages landmarks`).
constexpr double kCpu3dSearchRate = 3.5e8, kCpu3dPreprocessRate = 1.3e7;
constexpr double kCudaPerSearch = 1e-3, kCudaSearchRate = 5e11, kCudaRefineRate = 1e10,
                 kCudaPreprocessRate = 2e9;
// refine = "global": the sample job's rigid fit refined over its 0.56 M
// source voxels in 5.1 s on 2 CPU threads (5.5e4 voxels a second a thread),
// 0.98 s on the H200 host's 16 (3.6e4), 0.020 s on the H200 (2.8e7; `bench
// stages landmarks`, its "landmarks global" job). With it, auto took the
// GPU there: 0.348 s against the CPU's 1.131 (it took the CPU, 0.97 s
// against 0.34, before).
constexpr double kCpuGlobalRefineRate = 4e4, kCudaGlobalRefineRate = 2.5e7;

}  // namespace

double gpu_start_seconds(int batch_jobs, bool context_made, int jobs_before) {
    return context_made ? 0.0 : kCudaStartSeconds / std::max({1, batch_jobs, jobs_before + 1});
}

namespace {
std::atomic<int> started_jobs{0};
}
double gpu_start_seconds_here(int batch_jobs, int gpu) {
    return gpu_start_seconds(batch_jobs, cuda::context_made(gpu), started_jobs);
}
void job_started() { ++started_jobs; }

BackendEstimate estimate_backends(const StackPlan& plan, int threads, int searchers, double gpu_start) {
    BackendEstimate e;
    e.cpu_threads = std::max(1, threads);
    e.gpu_start = gpu_start;
    // Rotation, bitmap projections and projection matching have other costs
    // (and CPU paths 6-25x slower than the GPU on every job measured).
    if (!plan.motion.translation_only() || plan.setup.method != SearchMethod::window || plan.projection.on) return e;
    e.modelled = true;
    const double pairs = double(plan.kept.size()) - 1;
    const double skips = plan.solve == OffsetSolve::least_squares ? std::max(0.0, pairs - 1) : 0.0;
    // cosine_stretch = "auto" aligns the pairs twice, stretched and as read.
    const double ways = plan.stretch_auto && plan.solve == OffsetSolve::least_squares ? 2.0 : 1.0;
    const double searches = ways * (pairs + skips);
    const MiSearchParams& s = plan.setup.search;
    // Full-resolution shift scores per search, and launches on the GPU.
    // Coarse to fine: the range on bin^2 fewer shifts of bin^2 fewer
    // pixels, the sharpness lattice, and 25 shifts about the peak (now and
    // then 50 or more), each part a launch of its own.
    const auto [lattice, step] = sharpness_lattice(s.max_shift);
    const double lattice_shifts = double(2 * lattice.x + 1) * (2 * lattice.y + 1);
    const double b2 = double(plan.coarse_bin()) * plan.coarse_bin();
    const double shifts = b2 > 1 ? double(s.candidates()) / (b2 * b2) + lattice_shifts + 35.0 : double(s.candidates());
    const double launches = b2 > 1 ? 4.0 : 1.0;
    const double window = double(s.window_pixels());
    const double updates = searches * shifts * window;
    const double refined =
        plan.setup.subpixel == Subpixel::continuous ? ways * (pairs + skips) * refine_evaluations(2) * window : 0.0;
    // Loads: each view once a way, its stretched copies (one per pair), a
    // few shifted skip copies.
    const double loads = double(plan.kept.size()) * (ways * 1.2 + (plan.stretch ? 1.0 : 0.0));
    const double pixels = loads * double(plan.width) * plan.height;
    const double t = e.cpu_threads;
    e.cpu_seconds = updates / (kCpuSearchRate * t) + refined / (kCpuRefineRate * t) + pixels / (kCpuPreprocessRate * t);
    e.cuda_seconds = gpu_start + searches * launches * kCudaPerSearch / std::max(1, searchers) + updates / kCudaSearchRate +
                     refined / kCudaRefineRate + pixels / kCudaPreprocessRate;
    return e;
}

BackendEstimate estimate_landmark_backends(std::size_t points, std::int64_t candidates, std::int64_t window_voxels,
                                           std::int64_t volume_voxels, int threads, double gpu_start, bool null_search,
                                           bool global_refine) {
    BackendEstimate e;
    e.cpu_threads = std::max(1, threads);
    e.gpu_start = gpu_start;
    e.modelled = true;
    const double t = e.cpu_threads;
    const double searches = null_search ? 2.0 : 1.0;
    const double updates = searches * double(points) * double(candidates) * double(window_voxels);
    const double voxels = (null_search ? 3.0 : 2.0) * double(volume_voxels);
    // Per point, one launch of 32 points' windows at a time on the GPU.
    const double launches = searches * std::ceil(double(points) / 32.0);
    e.cpu_seconds = updates / (kCpu3dSearchRate * t) + voxels / (kCpu3dPreprocessRate * t);
    e.cuda_seconds = gpu_start + launches * kCudaPerSearch + updates / kCudaSearchRate + voxels / kCudaPreprocessRate;
    if (global_refine) {
        e.cpu_seconds += double(volume_voxels) / (kCpuGlobalRefineRate * t);
        e.cuda_seconds += double(volume_voxels) / kCudaGlobalRefineRate;
    }
    return e;
}

Backend choose_by_estimate(BackendRequest requested, int gpu, std::optional<BackendEstimate>& estimate) {
    // The CPU estimated sooner is the answer whether or not there is a GPU,
    // and asking the driver is not free: a lone process's driver start and
    // its release at exit took 0.15-0.17 s of the X-ray-sized job's 0.38-0.40
    // s on the H200 host, against 0.22-0.23 s on the CPU without it (`bench stages xray`).
    if (estimate && estimate->cpu_seconds < estimate->cuda_seconds) return Backend::cpu;
    const Backend b = choose_backend(requested, gpu);
    if (estimate && b == Backend::cuda) estimate->gpu_asked = true;
    else estimate.reset();  // no GPU: nothing was weighed
    return b;
}

nlohmann::ordered_json choice_record(const BackendEstimate& e) {
    return {{"requested", "auto"},
            {"cpu_seconds_estimate", e.cpu_seconds},
            {"cpu_threads", e.cpu_threads},
            {"cuda_seconds_estimate", e.cuda_seconds},
            {"cuda_start_seconds", e.gpu_start},
            {"gpu_looked_for", e.gpu_asked}};
}

std::string describe_choice(const BackendEstimate& e, bool cpu_chosen) {
    char line[240];
    std::snprintf(line, sizeof line, "%s (auto: estimated %.2f s on %d CPU threads, %.2f s on the GPU %s%s)",
                  cpu_chosen ? "cpu" : "cuda", e.cpu_seconds, e.cpu_threads, e.cuda_seconds,
                  e.gpu_start == 0                  ? "already started in this process"
                  : e.gpu_start < kCudaStartSeconds ? "with its share of a start for several jobs"
                                                    : "with its start",
                  e.gpu_asked ? "" : "; the CPU estimated sooner, so no GPU was looked for");
    return line;
}

}  // namespace stackalign
