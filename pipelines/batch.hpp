// Many jobs in one run (a config with [[job]] tables or [input] glob): each
// job isolated, so one bad series is reported and the rest go on; a summary
// table in the log and batch.json; --resume skips jobs already done.
#pragma once
#include <string>
#include <vector>

#include "../src/config.hpp"
#include "run_options.hpp"

namespace stackalign {

struct JobOutcome {
    std::string name, output;
    std::string status;   // ok | failed | skipped (up to date) | interrupted | not run (interrupted)
    std::string error;    // the message, for failed jobs
    int exit_code = 0;    // the code the job alone would have exited with
    int items = 0;        // frames (stacks) or points (landmarks)
    double seconds = 0;
    std::string backend;
};

// Runs one job: skipped when opt.resume and its outputs are up to date.
JobOutcome run_job(const Job& job, const RunOptions& opt);

// Runs every job, writes <summary_dir>/batch.json, returns the exit code:
// 0 when every job is ok or up to date, interrupted (130) after SIGINT or
// SIGTERM, batch_failed (7) when any job failed.
int run_batch(const Batch& batch, const RunOptions& opt, std::vector<JobOutcome>* outcomes = nullptr);

std::string summary_table(const std::vector<JobOutcome>& outcomes);

}  // namespace stackalign
