// What every pipeline takes from the command line, and the stage timer they share.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include "../kernels/backend.hpp"
#include "../src/core/progress.hpp"

namespace stackalign {

struct RunOptions {
    std::optional<BackendRequest> backend;  // overrides [device] backend
    bool resume = false;                    // skip jobs whose outputs are complete and up to date
    std::size_t frame_cache_bytes = 0;      // input frames kept in memory; 0 = 40% of physical memory
    int threads = 0;                        // 0 = OpenMP default
    int jobs_at_once = 0;                   // a batch's jobs at work at once per GPU (or on the CPU); 0 = auto
    int batch_jobs = 1;                     // jobs of the batch this job is one of: they share one GPU start
    // The process's memory high-water mark reset at the job's start, so that
    // run.json's peak is the job's: not where other jobs run in the process
    // meanwhile (a batch's jobs at once), nor in a process that is the
    // caller's (the Python module: the caller's own peak would be cut).
    bool own_peak_memory = true;
    Verbosity verbosity = Verbosity::normal;
    // run --fail-on: "failed" or "suspect" makes a run (or a batch) with a
    // verdict that bad exit with ExitCode::verdict; "" never.
    std::string fail_on;
};

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Seconds spent per stage of one job, for the log and run.json.
struct StageTimes {
    double read = 0, preprocess = 0, search = 0, refine = 0, project = 0, apply = 0, write = 0;
};

}  // namespace stackalign
