// Command line only: parse arguments, run one command, turn every error into
// one message and one exit code.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>

#include "../kernels/cuda_api.hpp"
#include "../pipelines/batch.hpp"
#include "../pipelines/watch.hpp"
#include "../pipelines/plan/landmark_plan.hpp"
#include "../pipelines/plan/output_guard.hpp"
#include "../pipelines/plan/stack_plan.hpp"
#include "../src/config/config.hpp"
#include "../src/config/schema.hpp"
#include "../src/core/error.hpp"
#include "../src/core/interrupt.hpp"
#include "../src/core/version.hpp"

using namespace stackalign;

int main(int argc, char** argv) {
    CLI::App app{"stackalign " STACKALIGN_VERSION
                 " - align image stacks and tilt series by mutual-information window search (CPU/OpenMP or CUDA)"};
    app.set_version_flag("--version", "stackalign " STACKALIGN_VERSION);
    app.require_subcommand(1);

    std::string config_path;
    std::string backend;
    int threads = 0;
    bool verbose = false, quiet = false, resume = false;
    std::string shard_arg, fail_on;
    double cache_mb = 0;
    int jobs_at_once = 0;
    std::vector<std::string> summaries;

    auto add_common = [&](CLI::App* cmd) {
        cmd->add_option("config", config_path, "TOML config file")->required()->check(CLI::ExistingFile);
        cmd->add_option("--backend", backend, "auto | cpu | cuda (overrides [device] backend)")
            ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
        cmd->add_option("--threads", threads, "OpenMP threads for the CPU work (default: all cores)")
            ->check(CLI::NonNegativeNumber);
        auto* v = cmd->add_flag("--verbose,-v", verbose, "more detail in the log");
        cmd->add_flag("--quiet,-q", quiet, "no progress or log lines, errors only")->excludes(v);
    };
    CLI::App* run = app.add_subcommand("run", "run the job(s) described by CONFIG and write the outputs");
    add_common(run);
    run->add_flag("--resume", resume, "skip jobs whose outputs are complete and whose inputs and config are unchanged");
    run->add_option("--cache-mb", cache_mb,
                    "memory for keeping input frames between steps (default: 40% of RAM); beyond it frames stream")
        ->check(CLI::NonNegativeNumber);
    run->add_option("--jobs-at-once", jobs_at_once,
                    "a batch's jobs at work at once on each GPU, or on the CPU (default 2; up to 4 for series of a GiB "
                    "and more, as the host's memory allows); "
                    "results do not depend on it")
        ->check(CLI::Range(1, 64));
    run->add_option("--fail-on", fail_on,
                    "exit with code 9 when a run's verdict (run.json quality) is this bad or worse: failed | suspect "
                    "(default: the verdict never changes the exit code)")
        ->check(CLI::IsMember({"failed", "suspect"}));
    run->add_option("--shard", shard_arg,
                    "K/N: run the K-th of N slices of the job list (default under a Slurm job array: its task)");
    CLI::App* watch = app.add_subcommand("watch", "align each series of CONFIG's [input] glob as it arrives; "
                                                  "the GPU stays open between series");
    add_common(watch);
    WatchOptions watching;
    watch->add_option("--settle-seconds", watching.settle_seconds,
                      "a series is complete once its file is unchanged this long (default 5), or its .mdoc lists every view")
        ->check(CLI::NonNegativeNumber);
    watch->add_option("--poll-seconds", watching.poll_seconds, "how often the folder is looked at (default 1)")
        ->check(CLI::PositiveNumber);
    watch->add_flag("--once", watching.once, "align the series there now (each taken as complete) and exit");
    watch->add_option("--fail-on", fail_on, "with --once: exit with code 9 when a series' verdict is this bad: failed | suspect")
        ->check(CLI::IsMember({"failed", "suspect"}));
    CLI::App* merge = app.add_subcommand("merge-summary", "combine the batch.json files of shards into one table");
    merge->add_option("summaries", summaries, "folders holding batch*.json, or the files")->required();
    CLI::App* check = app.add_subcommand("check", "validate CONFIG and open every input without aligning");
    add_common(check);
    app.add_subcommand("keys", "list every config key: type, default, the mode that uses it, meaning (markdown)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : int(ExitCode::usage);
    }

    cuda::set_work_queues();
    RunOptions opt;
    if (!backend.empty()) opt.backend = parse_name<BackendRequest>(backend);
    opt.threads = threads;
    opt.verbosity = quiet ? Verbosity::quiet : verbose ? Verbosity::verbose : Verbosity::normal;
    opt.resume = resume;
    opt.frame_cache_bytes = std::size_t(cache_mb * (1 << 20));
    opt.jobs_at_once = jobs_at_once;
    opt.fail_on = fail_on;

    try {
        if (app.got_subcommand("keys")) {
            std::printf("%s", schema_markdown().c_str());
            return 0;
        }
        if (merge->parsed()) {
            bool interrupted = false;
            const std::vector<JobOutcome> all = merge_summaries(summaries, &interrupted);
            int failed = 0;
            for (const JobOutcome& o : all) failed += o.status == "failed";
            std::printf("%s%zu jobs, %d failed%s\n", summary_table(all).c_str(), all.size(), failed,
                        interrupted ? ", some shard interrupted" : "");
            return interrupted ? int(ExitCode::interrupted) : failed ? int(ExitCode::batch_failed) : 0;
        }
        if (watch->parsed()) {
            install_interrupt_handlers();
            return run_watch(config_path, opt, watching);
        }
        Batch batch = load_jobs(config_path);
        check_outputs_spare_inputs(batch);
        if (check->parsed()) {
            std::printf("%s: OK (%zu job%s)\n", config_path.c_str(), batch.jobs.size(), batch.jobs.size() == 1 ? "" : "s");
            for (const Job& job : batch.jobs) {
                const Config& cfg = job.config;
                if (batch.is_batch) std::printf("\n== %s\n", job.name.c_str());
                std::printf("%s", cfg.mode == Mode::landmarks ? describe_landmark_plan(plan_landmarks(cfg, opt)).c_str()
                                                              : describe_plan(plan_stack(cfg, opt)).c_str());
                if (opt.verbosity == Verbosity::verbose) std::printf("keys (resolved):\n%s", describe_config(cfg).c_str());
            }
            return 0;
        }
        install_interrupt_handlers();
        const Shard shard = shard_from(shard_arg);
        if (shard.active()) {
            batch = select_shard(batch, shard);
            log_line(opt.verbosity, "shard " + std::to_string(shard.k) + "/" + std::to_string(shard.n) + ": " +
                                        std::to_string(batch.jobs.size()) + " job(s)");
            return run_batch(batch, opt, nullptr, shard);
        }
        if (batch.is_batch) return run_batch(batch, opt);
        const JobOutcome o = run_job(batch.jobs.front(), opt);
        return verdict_fails(o, opt.fail_on) ? int(ExitCode::verdict) : 0;
    } catch (const Error& e) {
        std::fprintf(stderr, "stackalign: error: %s\n", e.what());
        return int(e.code());
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "stackalign: error: out of memory\n");
        return int(ExitCode::internal);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "stackalign: internal error: %s\n", e.what());
        return int(ExitCode::internal);
    }
}
