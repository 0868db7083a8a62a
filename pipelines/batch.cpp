#include "batch.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../kernels/cuda_api.hpp"
#include "../src/core/error.hpp"
#include "../src/core/interrupt.hpp"
#include "../src/core/peak_memory.hpp"
#include "../src/core/workers.hpp"
#include "../src/io/stack_io.hpp"
#include "../src/output/atomic_write.hpp"
#include "landmarks.hpp"
#include "plan/provenance.hpp"
#include "stack.hpp"
#include "stages/judge_run.hpp"

namespace fs = std::filesystem;

namespace stackalign {

std::string JobOutcome::verdict() const {
    return quality.is_object() ? quality.value("verdict", "") : "";
}

namespace {
// run.json's quality in `dir`, or null (landmarks; a run.json from before verdicts).
nlohmann::json read_quality(const std::string& dir) {
    std::ifstream in(fs::path(dir) / "run.json");
    if (!in) return nullptr;
    try {
        return nlohmann::json::parse(in).value("quality", nlohmann::json());
    } catch (const nlohmann::json::exception&) {
        return nullptr;
    }
}
}  // namespace

JobOutcome run_job(const Job& job, const RunOptions& opt) {
    JobOutcome o;
    o.name = job.name;
    o.output = job.config.output.dir;
    if (opt.resume && outputs_up_to_date(job.config)) {
        o.status = "skipped (up to date)";
        o.quality = read_quality(o.output);
        log_line(opt.verbosity, job.name + ": outputs in " + o.output + " are up to date; skipped (--resume)");
        return o;
    }
    const auto t = Clock::now();
    if (job.config.mode == Mode::landmarks) {
        const LandmarkResult r = run_landmarks(job.config, opt);
        o.items = int(r.matches.size());
        o.backend = r.backend_description;
    } else {
        const StackResult r = run_stack(job.config, opt);
        o.items = int(r.frames.size());
        o.backend = r.backend_description;
        o.quality = quality_record(r.quality);
    }
    o.seconds = seconds_since(t);
    o.status = "ok";
    return o;
}

std::string summary_table(const std::vector<JobOutcome>& outcomes) {
    std::ostringstream t;
    t << "| job | status | verdict | frames/points | seconds | backend | error |\n|---|---|---|---|---|---|---|\n";
    for (const JobOutcome& o : outcomes) {
        char secs[32];
        std::snprintf(secs, sizeof secs, "%.2f", o.seconds);
        std::string backend = o.backend.substr(0, o.backend.find(';'));  // device, not the whole policy
        t << "| " << o.name << " | " << o.status << " | " << o.verdict() << " | " << o.items << " | " << secs << " | " << backend << " | "
          << o.error << " |\n";
    }
    return t.str();
}

bool verdict_fails(const JobOutcome& o, const std::string& level) {
    const std::string v = o.verdict();
    return (level == "failed" && v == "failed") || (level == "suspect" && (v == "failed" || v == "suspect"));
}

std::string series_quality_csv(const std::vector<JobOutcome>& outcomes) {
    std::ostringstream t;
    t << "job,status,verdict,pairs,pairs_not_ok,share_not_ok,triplet_rms_px,projection_rms_px,tilt_axis_standard_error,"
         "reasons\n";
    auto number = [](const nlohmann::json& q, const char* key) -> std::string {
        return q.is_object() && q.contains(key) && q[key].is_number() ? q[key].dump() : "";
    };
    auto quoted = [](std::string s) {  // RFC 4180
        std::string out = "\"";
        for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
        return out + "\"";
    };
    for (const JobOutcome& o : outcomes) {
        const nlohmann::json& q = o.quality;
        std::string reasons;
        if (q.is_object() && q.contains("reasons"))
            for (const auto& r : q["reasons"]) reasons += (reasons.empty() ? "" : "; ") + r.get<std::string>();
        if (reasons.empty() && o.status == "failed") reasons = o.error;
        t << quoted(o.name) << "," << o.status << "," << o.verdict() << "," << number(q, "pairs") << ","
          << number(q, "pairs_not_ok") << "," << number(q, "share_not_ok") << "," << number(q, "triplet_rms_px") << ","
          << number(q, "projection_rms_px") << "," << number(q, "tilt_axis_standard_error") << "," << quoted(reasons)
          << "\n";
    }
    return t.str();
}

// One job, its failure turned into an outcome: one bad series must not stop
// the night's batch.
JobOutcome run_isolated(const Job& job, const RunOptions& opt, bool& interrupted) {
    try {
        return run_job(job, opt);
    } catch (const Error& e) {
        JobOutcome o{job.name, job.config.output.dir, "failed", e.what(), int(e.code()), 0, 0, "", {}};
        if (e.code() == ExitCode::interrupted) {
            o.status = "interrupted";
            interrupted = true;
        }
        log_line(Verbosity::normal, job.name + ": " + o.status + ": " + e.what());
        return o;
    } catch (const std::exception& e) {
        log_line(Verbosity::normal, job.name + ": failed: " + e.what());
        return {job.name, job.config.output.dir, "failed", e.what(), int(ExitCode::internal), 0, 0, "", {}};
    }
}

namespace {

// The GPUs a batch spreads its jobs over: [device] gpus of the batch; none
// when the jobs run on the CPU or on one GPU. With "auto" and no list each
// job weighs the backends itself: asking the driver here cost a batch the
// CPU took 0.1-0.15 s (8 copies of the HAADF sample, H100 host, `STAGES_BATCH=8 build/bench stages`).
std::vector<int> batch_gpus(const std::vector<Job>& jobs, const RunOptions& opt) {
    if (jobs.empty()) return {};
    const DeviceConfig& d = jobs.front().config.device;
    const BackendRequest requested = opt.backend.value_or(d.backend);
    if (d.gpus.empty() && requested == BackendRequest::automatic) return {};
    return resolve_gpus(d.gpus, choose_backend(requested, d.gpu));
}

// The bytes of the series `job` reads from one stack file, else 0 (a glob
// of files, or a file not there yet).
std::uintmax_t series_bytes(const Job& job) {
    std::error_code ec;
    const std::string& path = job.config.input.stack;
    if (path.empty() || !fs::is_regular_file(path, ec)) return 0;
    const std::uintmax_t n = fs::file_size(path, ec);
    return ec ? 0 : n;
}

}  // namespace

int jobs_at_once_for(std::uintmax_t series, std::uintmax_t memory, int devices) {
    if (series < kLargeSeriesBytes) return kJobsAtOnce;
    // Each job at once holds up to twice its series on the host (its
    // frames and its aligned output's queue); half the host's memory for
    // them, shared by the devices' jobs.
    const std::uintmax_t fit = memory / 2 / (2 * series) / std::uintmax_t(std::max(devices, 1));
    return int(std::clamp<std::uintmax_t>(fit, kJobsAtOnce, kJobsAtOnceLarge));
}

namespace {

// --jobs-at-once, else jobs_at_once_for the first series' `series` bytes.
int jobs_at_once(const RunOptions& opt, std::uintmax_t series, int devices) {
    return opt.jobs_at_once > 0 ? opt.jobs_at_once : jobs_at_once_for(series, physical_memory_bytes(), devices);
}

}  // namespace

SpreadRun run_jobs_spread(const Job& devices_from, std::size_t total, const RunOptions& opt, const NextJob& next,
                          const std::function<void(std::size_t, JobOutcome&&)>& finished) {
    SpreadRun run;
    std::atomic<bool> interrupted{false};
    std::mutex finishing;
    run.gpus = batch_gpus({devices_from}, opt);
    // jobs_at_once workers per GPU (or on the CPU), each taking the next
    // job: a job runs whole on one device, so its results are those of a
    // one-GPU run. Workers share the host's threads and the frame cache
    // evenly, and their jobs' log lines start with the job's name.
    const std::uintmax_t series = series_bytes(devices_from);
    run.per_device = jobs_at_once(opt, series, int(run.gpus.size()));
    if (opt.jobs_at_once == 0 && run.per_device != kJobsAtOnce)
        log_line(opt.verbosity, std::to_string(run.per_device) + " jobs at once" +
                                    (run.gpus.size() > 1 ? " on each GPU" : "") + ": the first series is " +
                                    std::to_string(series >> 20) + " MB (--jobs-at-once to set it)");
    const std::vector<int>& gpus = run.gpus;
    const std::size_t most = std::size_t(run.per_device) * std::max<std::size_t>(1, gpus.size());
    const int workers = int(total > 0 ? std::min(total, most) : most);
    if (opt.threads > 0) omp_set_num_threads(opt.threads);  // what run_workers shares out
    RunOptions each = opt;
    if (workers > 1) {
        each.threads = workers_threads(workers);  // run_workers' share, which the job would otherwise reset
        each.own_peak_memory = false;
        each.frame_cache_bytes = frame_cache_budget(opt.frame_cache_bytes) / workers;
    }
    auto worker = [&](int w) {
        const int gpu = gpus.empty() ? -1 : gpus[w % gpus.size()];
        for (;;) {
            if (interrupted || interrupt_requested()) {
                interrupted = true;
                return;
            }
            std::optional<std::pair<std::size_t, Job>> taken = next();
            if (!taken) return;
            auto& [i, job] = *taken;
            if (gpu >= 0) job.config.device.gpu = gpu;
            if (gpus.size() > 1) job.config.device.gpus.clear();  // one GPU per job: the others are busy
            log_line(opt.verbosity, "job " + std::to_string(i + 1) + (total > 0 ? "/" + std::to_string(total) : "") +
                                        ": " + job.name +
                                        (gpu >= 0 && gpus.size() > 1 ? " (GPU " + std::to_string(gpu) + ")" : ""));
            bool stopped = false;
            JobOutcome o;
            {
                const LogPrefix named(workers > 1 ? job.name + ": " : "");
                o = run_isolated(job, each, stopped);
            }
            if (stopped) interrupted = true;
            const std::lock_guard<std::mutex> one_at_a_time(finishing);
            finished(i, std::move(o));
        }
    };
    run_workers(workers, worker);
    run.interrupted = interrupted;
    return run;
}

int run_batch(const Batch& batch, const RunOptions& opt, std::vector<JobOutcome>* out, const Shard& shard) {
    const std::size_t n = batch.jobs.size();
    std::vector<JobOutcome> outcomes(n);
    std::vector<char> done(n, false);
    RunOptions each = opt;
    each.batch_jobs = int(n);
    std::atomic<std::size_t> next{0};
    auto in_order = [&]() -> std::optional<std::pair<std::size_t, Job>> {
        const std::size_t i = next++;
        if (i >= n) return std::nullopt;
        return std::make_pair(i, batch.jobs[i]);
    };
    const SpreadRun run = n == 0 ? SpreadRun{false, {}, jobs_at_once(opt, 0, 1)}
                                 : run_jobs_spread(batch.jobs.front(), n, each, in_order, [&](std::size_t i, JobOutcome&& o) {
                                       outcomes[i] = std::move(o);
                                       done[i] = true;
                                   });
    const bool interrupted = run.interrupted;
    const std::vector<int>& gpus = run.gpus;
    const int per_device = run.per_device;
    for (std::size_t i = 0; i < n; ++i)
        if (!done[i])
            outcomes[i] = {batch.jobs[i].name, batch.jobs[i].config.output.dir, "not run (interrupted)", "", 0, 0, 0, "", {}};
    int ok = 0, failed = 0, skipped = 0;
    for (const JobOutcome& o : outcomes) {
        ok += o.status == "ok";
        failed += o.status == "failed";
        skipped += o.status.rfind("skipped", 0) == 0;
    }
    nlohmann::ordered_json j;
    j["jobs"] = nlohmann::json::array();
    for (const JobOutcome& o : outcomes)
        j["jobs"].push_back({{"name", o.name},
                             {"status", o.status},
                             {"output", o.output},
                             {"items", o.items},
                             {"seconds", o.seconds},
                             {"backend", o.backend},
                             {"error", o.error},
                             {"exit_code", o.exit_code},
                             {"quality", o.quality}});
    j["ok"] = ok;
    j["failed"] = failed;
    j["skipped"] = skipped;
    j["interrupted"] = bool(interrupted);
    if (gpus.size() > 1) j["gpus"] = gpus;
    j["jobs_at_once"] = per_device;  // per GPU, or on the CPU
    prepare_output_dir(batch.summary_dir);
    const std::string summary_name = shard.active() ? "batch-shard-" + std::to_string(shard.k) + "-of-" +
                                                          std::to_string(shard.n) + ".json"
                                                    : "batch.json";
    if (shard.active()) j["shard"] = {shard.k, shard.n};
    const std::string quality_name = shard.active() ? "series_quality-shard-" + std::to_string(shard.k) + "-of-" +
                                                          std::to_string(shard.n) + ".csv"
                                                    : "series_quality.csv";
    write_text_atomically((fs::path(batch.summary_dir) / quality_name).string(), series_quality_csv(outcomes));
    write_text_atomically((fs::path(batch.summary_dir) / summary_name).string(), j.dump(2) + "\n");
    if (opt.verbosity != Verbosity::quiet) std::fprintf(stderr, "\n%s\n", summary_table(outcomes).c_str());
    log_line(opt.verbosity, std::to_string(ok) + " ok, " + std::to_string(failed) + " failed, " +
                                std::to_string(skipped) + " up to date" + (interrupted ? ", interrupted" : "") +
                                "; summary in " + (fs::path(batch.summary_dir) / summary_name).string());
    if (out) *out = outcomes;
    if (interrupted) return int(ExitCode::interrupted);
    if (failed) return int(ExitCode::batch_failed);
    const bool bad = std::any_of(outcomes.begin(), outcomes.end(),
                                 [&](const JobOutcome& o) { return verdict_fails(o, opt.fail_on); });
    return bad ? int(ExitCode::verdict) : 0;
}

Shard shard_from(const std::string& arg) {
    Shard s;
    std::string k, n;
    std::string from;
    if (!arg.empty()) {
        const auto slash = arg.find('/');
        if (slash == std::string::npos) throw ConfigError("--shard " + arg + ": expected K/N, e.g. --shard 2/8");
        k = arg.substr(0, slash);
        n = arg.substr(slash + 1);
        from = "--shard " + arg;
    } else if (const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT")) {
        const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
        const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
        if (!id) throw ConfigError("SLURM_ARRAY_TASK_COUNT is set but SLURM_ARRAY_TASK_ID is not");
        try {
            k = std::to_string(std::stoi(id) - (min ? std::stoi(min) : 0) + 1);
        } catch (const std::exception&) {
            throw ConfigError(std::string("SLURM_ARRAY_TASK_ID=") + id + ": not a number");
        }
        n = count;
        from = std::string("Slurm array task ") + id + " of " + count;
    } else {
        return s;
    }
    try {
        std::size_t used = 0;
        s.k = std::stoi(k, &used);
        if (used != k.size()) throw std::invalid_argument(k);
        s.n = std::stoi(n, &used);
        if (used != n.size()) throw std::invalid_argument(n);
    } catch (const std::exception&) {
        throw ConfigError(from + ": expected whole numbers K/N");
    }
    if (s.n < 1 || s.k < 1 || s.k > s.n)
        throw ConfigError(from + ": shard " + std::to_string(s.k) + " of " + std::to_string(s.n) +
                          " does not exist (need 1 <= K <= N)");
    return s;
}

Batch select_shard(const Batch& batch, const Shard& shard) {
    Batch out = batch;
    out.jobs.clear();
    for (std::size_t i = 0; i < batch.jobs.size(); ++i)
        if (int(i % shard.n) == shard.k - 1) out.jobs.push_back(batch.jobs[i]);
    return out;
}

std::vector<JobOutcome> merge_summaries(const std::vector<std::string>& paths, bool* interrupted) {
    std::vector<std::string> files;
    for (const std::string& p : paths) {
        if (!fs::is_directory(p)) {
            files.push_back(p);
            continue;
        }
        std::vector<std::string> found;
        for (const auto& e : fs::directory_iterator(p)) {
            const std::string name = e.path().filename().string();
            if (name == "batch.json" || (name.rfind("batch-shard-", 0) == 0 && e.path().extension() == ".json"))
                found.push_back(e.path().string());
        }
        if (found.empty()) throw InputError(p + ": no batch.json or batch-shard-*.json in this folder");
        std::sort(found.begin(), found.end());
        files.insert(files.end(), found.begin(), found.end());
    }
    std::vector<JobOutcome> all;
    if (interrupted) *interrupted = false;
    for (const std::string& f : files) {
        std::ifstream in(f);
        if (!in) throw InputError(f + ": cannot open");
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(in);
            for (const auto& o : j.at("jobs"))
                all.push_back({o.at("name"), o.at("output"), o.at("status"), o.at("error"), o.at("exit_code"),
                               o.at("items"), o.at("seconds"), o.at("backend"), o.value("quality", nlohmann::json())});
        } catch (const nlohmann::json::exception& e) {
            throw InputError(f + ": not a stackalign batch summary (" + e.what() + ")");
        }
        if (interrupted && j.value("interrupted", false)) *interrupted = true;
    }
    return all;
}

}  // namespace stackalign
