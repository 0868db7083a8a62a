// `stackalign watch CONFIG`: align each series of a batch config's [input]
// glob as it arrives from the microscope, in one process that keeps the GPU
// open between series.
//
// A series is taken once complete: its file unchanged in size and time for
// `settle_seconds`, or at once where the .mdoc beside it lists as many
// views as the stack holds. One already aligned with the same inputs and
// config (run.json's fingerprint, as --resume) is never redone, also across
// restarts; a failed one is reported and tried again only once its file
// changes. Series run as a batch runs its jobs (run_jobs_spread: over
// [device] gpus, a few at once on each); a worker that comes free looks
// for the next complete series, so a backlog uses every GPU and a series
// never waits for another's end. After each series, a progress line and
// series_quality.csv (every series handled in this watch) beside the
// batch's outputs.
#pragma once
#include <string>
#include <vector>

#include "batch.hpp"
#include "run_options.hpp"

namespace stackalign {

struct WatchOptions {
    double settle_seconds = 5;
    double poll_seconds = 1;
    // Handle the series there now, each taken as complete, and return.
    bool once = false;
};

// Returns the exit code: 0 when stopped between series (SIGINT/SIGTERM or
// --once done), ExitCode::interrupted when a series was stopped part-way
// (it leaves no run.json), ExitCode::verdict where opt.fail_on asks and a
// series' verdict was that bad (--once only: a watch goes on).
int run_watch(const std::string& config_path, const RunOptions& opt, const WatchOptions& w,
              std::vector<JobOutcome>* outcomes = nullptr);

}  // namespace stackalign
