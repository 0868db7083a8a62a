// Many jobs in one run (a config with [[job]] tables or [input] glob): each
// job isolated, so one bad series is reported and the rest go on; a summary
// table in the log, batch.json and series_quality.csv (each stack job's
// verdict, pipelines/stages/judge_run.hpp); --resume skips jobs already done.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../src/config/config.hpp"
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
    // Stacks: run.json's quality (its verdict "ok", "suspect" or "failed"
    // and why), also for a job skipped as up to date; null otherwise.
    nlohmann::json quality;
    std::string verdict() const;
};

// Clusters: the k-th (1-based) of n deterministic slices of the job list,
// jobs dealt round-robin (i mod n) so that slices of a sorted list are alike.
// Its summary goes to batch-shard-K-of-N.json, so shards never share a file.
struct Shard {
    int k = 1, n = 1;
    bool active() const { return n > 1; }
};
// From "--shard K/N", else from a Slurm job array's environment
// (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN + 1 of SLURM_ARRAY_TASK_COUNT),
// else 1/1. UsageError-style ConfigError for anything malformed.
// Runs one job: skipped when opt.resume and its outputs are up to date.
JobOutcome run_job(const Job& job, const RunOptions& opt);

// Runs every job, writes <summary_dir>/batch.json, returns the exit code:
// 0 when every job is ok or up to date, interrupted (130) after SIGINT or
// SIGTERM, batch_failed (7) when any job failed.
// One job, a failure turned into an outcome ("failed", its error and exit
// code; "interrupted" sets `interrupted`).
JobOutcome run_isolated(const Job& job, const RunOptions& opt, bool& interrupted);
// --fail-on: whether an outcome's verdict is as bad as `level` ("failed" or
// "suspect"; "" never).
bool verdict_fails(const JobOutcome& o, const std::string& level);
int run_batch(const Batch& batch, const RunOptions& opt, std::vector<JobOutcome>* outcomes = nullptr,
              const Shard& shard = {});

// Runs jobs as a batch does (and a watch, as its series arrive): each
// whole on one device, a few at once on each GPU of [device] gpus (read
// from `devices_from`) or on the CPU, sharing the host's threads and
// frame cache. A free worker takes `next()`: a job and its number, or none
// once no more will come (it may wait for one). `total`: how many jobs
// there are, where known (the log's "job i/N", and no more workers than
// jobs), else 0. `finished(i, outcome)` is called as job i ends, one call
// at a time. Once interrupted no job starts.
struct SpreadRun {
    bool interrupted = false;
    std::vector<int> gpus;  // the GPUs spread over (none: one device)
    int per_device = 0;     // jobs at once on each
};
// Jobs at work at once on each GPU (or on the CPU) where --jobs-at-once
// does not say. Why two: one job leaves the GPU idle while the host reads
// and decodes views, writes the aligned stack and makes the report, and
// leaves cores idle in its short parallel loops and the chains' dependent
// steps; the other job's work fills those gaps. Batches of 8 copies of
// `bench stages`' jobs ran 1.10-1.41x faster on an H100 and 1.19-1.44x on
// its host's 16 cores, eight 1024^2 series on 2 x H100 1.2-1.3x, the
// X-ray-sized job 1.15x on a 2-core machine (`STAGES_BATCH=8 build/bench
// stages`). Not three for those: it gained only on the standard job (121 x
// 1024^2), and each job at once holds its own device memory and views.
// Series of a GiB and more (a stack file that size) run up to four at once,
// as many as twice their size each fits in half the host's memory (every
// GPU's jobs together): their jobs' serial host steps (decoding the
// frames, the first estimates, writing) leave the GPU idle for seconds,
// and two at once run a batch of a few such series in rounds, the last of
// which has nothing to fill those gaps. On the H200 host
// (`STAGES_BATCH=N build/bench stages acquisition`, then `stackalign run
// --jobs-at-once M` on its batch config): a batch of 4 copies of 61 x
// 4096^2 uint16 took 4.68 s a series at two at once, 4.37 at three, 3.99
// at four; of 61 x 5760 x 4092 ("acquisition k3") 7.01, 6.15, 5.56. A
// batch of 8 K3 copies keeps the GPU as busy either way: 5.90 s a series
// at two, 5.87 at four, 5.71 at six, the same shifts.csv.
constexpr int kJobsAtOnce = 2;
constexpr int kJobsAtOnceLarge = 4;
constexpr std::uintmax_t kLargeSeriesBytes = std::uintmax_t(1) << 30;
// Per device: `series`, the first job's stack file, bytes (0: unknown);
// `memory`, the host's; `devices`, the GPUs the jobs are spread over (0 or
// 1: one device).
int jobs_at_once_for(std::uintmax_t series, std::uintmax_t memory, int devices = 1);

using NextJob = std::function<std::optional<std::pair<std::size_t, Job>>()>;
SpreadRun run_jobs_spread(const Job& devices_from, std::size_t total, const RunOptions& opt, const NextJob& next,
                          const std::function<void(std::size_t, JobOutcome&&)>& finished);

std::string summary_table(const std::vector<JobOutcome>& outcomes);
// series_quality.csv: one row per job (job,status,verdict,pairs,
// pairs_not_ok,share_not_ok,triplet_rms_px,projection_rms_px,
// tilt_axis_standard_error,reasons); the numbers empty where a job has none.
std::string series_quality_csv(const std::vector<JobOutcome>& outcomes);

Shard shard_from(const std::string& arg);
Batch select_shard(const Batch& batch, const Shard& shard);

// Reads batch.json / batch-shard-*.json files (or the folders holding them)
// and returns their jobs together; `interrupted` is set if any shard was.
std::vector<JobOutcome> merge_summaries(const std::vector<std::string>& paths, bool* interrupted = nullptr);

}  // namespace stackalign
