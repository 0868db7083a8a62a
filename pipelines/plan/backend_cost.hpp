// `backend = "auto"` for a stack job: the GPU when there is one, unless the
// job is small enough that the CPU is estimated to finish it sooner
// (issue #19: the HAADF sample took 0.40 s on an H100 and 0.17 s on its 16
// cores). Both times are estimated from the job's shape: searches x
// candidates x window pixels, the continuous refinement's histograms, the
// views' preprocessing, and on the GPU its one-off start and a fixed cost
// per search (launches and waits). The rates are the ones measured in
// docs/benchmarks.md; the estimate only has to be right near the crossing,
// where jobs take a fraction of a second either way.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "../../kernels/backend.hpp"

namespace stackalign {

struct StackPlan;

// The GPU's one-off start in the estimate: the process's driver start and
// first launches (`stackalign check --backend cuda` alone: 0.15 s on the
// H100 host). A job the CPU finishes sooner needs no GPU looked for.
constexpr double kCudaStartSeconds = 0.2;
// What a job's estimate charges for it: its share, the batch's jobs
// sharing one start. Charged whole to each job, it sent a batch of 8
// X-ray-sized stacks run one at a time to the CPU, 1.86 s against 0.93 on
// the H100 host's GPU (`STAGES_BATCH=8 build/bench stages xray`). Nothing once the
// process has made the GPU's context (`context_made`: an earlier job of a
// batch or of a Python session, which keeps its context between calls).
// Not for having merely asked the driver: charging nothing then sent the
// HAADF batch to the GPU, 0.56-0.58 s against 0.37-0.46 on the CPU.
//
// A process that has started `jobs_before` jobs and no GPU (a Python
// session whose jobs all went to the CPU) charges the start over
// jobs_before + 1, as a batch of that many would: the GPU is taken once
// the time the CPU has lost so far, job after job, would have paid for its
// start. That is ski rental's break-even rule, never more than twice the
// time of the better choice made knowing how many jobs are to come.
// Without it such a session never starts the GPU: the X-ray-sized job
// stayed on the CPU at 0.18 s a call where the started GPU takes 0.067
// (H100 host, `bash bench/device.sh resident`).
double gpu_start_seconds(int batch_jobs, bool context_made, int jobs_before);
// That charge for a job planned now on `gpu` in this process: its context
// made or not, the jobs it has started so far.
double gpu_start_seconds_here(int batch_jobs, int gpu);
// The call each job (stack or landmarks) makes as it starts, which the count
// above follows.
void job_started();

struct BackendEstimate {
    double cpu_seconds = 0, cuda_seconds = 0;  // the job's searching stages, estimated (cuda: with its start)
    double gpu_start = kCudaStartSeconds;      // of cuda_seconds, the GPU's start
    int cpu_threads = 1;
    bool modelled = false;   // false: a job the model does not cover (the GPU whenever there is one)
    bool gpu_asked = false;  // false: the CPU was estimated sooner, and the GPU was not started
};

// The estimate for `plan` (its shape and keys; the backend it names does not
// matter) on `threads` CPU threads and `searchers` at once on one GPU,
// `gpu_start` seconds charged for the GPU's start.
BackendEstimate estimate_backends(const StackPlan& plan, int threads, int searchers, double gpu_start);

// The same for a landmark job: `points` windows of `window_voxels` each
// searched over `candidates` shifts (and refined), in two volumes of
// `volume_voxels` each; `null_search`: each window searched a second time,
// against the turned target ([landmarks] min_confidence); `global_refine`:
// the fit refined over the whole source volume (refine = "global").
BackendEstimate estimate_landmark_backends(std::size_t points, std::int64_t candidates, std::int64_t window_voxels,
                                           std::int64_t volume_voxels, int threads, double gpu_start,
                                           bool null_search = false, bool global_refine = false);

// The backend of a job asked for `requested` on `gpu`, weighed by
// `estimate` when there is one ("auto"): the CPU without asking the driver
// when it is estimated sooner, else the GPU if there is one. `estimate` is
// kept only where it decided (the CPU estimated sooner, or a GPU found).
Backend choose_by_estimate(BackendRequest requested, int gpu, std::optional<BackendEstimate>& estimate);

// run.json's plan.backend_choice: what the estimate said.
nlohmann::ordered_json choice_record(const BackendEstimate& e);

// "cpu (auto: estimated 0.13 s on 16 CPU threads, 0.25 s on the GPU with its start)"; "... with its
// share of a start for several jobs" (a batch's, or a process's k-th job), "... already started in this process".
std::string describe_choice(const BackendEstimate& e, bool cpu_chosen);

}  // namespace stackalign
