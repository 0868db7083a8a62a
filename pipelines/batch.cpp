#include "batch.hpp"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../src/error.hpp"
#include "../src/interrupt.hpp"
#include "../src/output_files.hpp"
#include "landmark_matching.hpp"
#include "stack_alignment.hpp"

namespace fs = std::filesystem;

namespace stackalign {

JobOutcome run_job(const Job& job, const RunOptions& opt) {
    JobOutcome o;
    o.name = job.name;
    o.output = job.config.output.dir;
    if (opt.resume && outputs_up_to_date(job.config)) {
        o.status = "skipped (up to date)";
        log_line(opt.verbosity, job.name + ": outputs in " + o.output + " are up to date; skipped (--resume)");
        return o;
    }
    const auto t = Clock::now();
    if (job.config.mode == "landmarks") {
        const LandmarkResult r = run_landmarks(job.config, opt);
        o.items = int(r.matches.size());
        o.backend = r.backend_description;
    } else {
        const StackResult r = run_stack(job.config, opt);
        o.items = int(r.frames.size());
        o.backend = r.backend_description;
    }
    o.seconds = seconds_since(t);
    o.status = "ok";
    return o;
}

std::string summary_table(const std::vector<JobOutcome>& outcomes) {
    std::ostringstream t;
    t << "| job | status | frames/points | seconds | backend | error |\n|---|---|---|---|---|---|\n";
    for (const JobOutcome& o : outcomes) {
        char secs[32];
        std::snprintf(secs, sizeof secs, "%.2f", o.seconds);
        std::string backend = o.backend.substr(0, o.backend.find(';'));  // device, not the whole policy
        t << "| " << o.name << " | " << o.status << " | " << o.items << " | " << secs << " | " << backend << " | "
          << o.error << " |\n";
    }
    return t.str();
}

int run_batch(const Batch& batch, const RunOptions& opt, std::vector<JobOutcome>* out) {
    std::vector<JobOutcome> outcomes;
    bool interrupted = false;
    for (std::size_t i = 0; i < batch.jobs.size(); ++i) {
        const Job& job = batch.jobs[i];
        if (interrupted || interrupt_requested()) {
            interrupted = true;
            outcomes.push_back({job.name, job.config.output.dir, "not run (interrupted)", "", 0, 0, 0, ""});
            continue;
        }
        log_line(opt.verbosity, "job " + std::to_string(i + 1) + "/" + std::to_string(batch.jobs.size()) + ": " +
                                    job.name);
        try {
            outcomes.push_back(run_job(job, opt));
        } catch (const Error& e) {
            // One bad series must not stop the night's batch: reported, and on.
            JobOutcome o{job.name, job.config.output.dir, "failed", e.what(), int(e.code()), 0, 0, ""};
            if (e.code() == ExitCode::interrupted) {
                o.status = "interrupted";
                interrupted = true;
            }
            log_line(Verbosity::normal, job.name + ": " + o.status + ": " + e.what());
            outcomes.push_back(o);
        } catch (const std::exception& e) {
            outcomes.push_back({job.name, job.config.output.dir, "failed", e.what(), int(ExitCode::internal), 0, 0, ""});
            log_line(Verbosity::normal, job.name + ": failed: " + e.what());
        }
    }
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
                             {"exit_code", o.exit_code}});
    j["ok"] = ok;
    j["failed"] = failed;
    j["skipped"] = skipped;
    j["interrupted"] = interrupted;
    prepare_output_dir(batch.summary_dir);
    write_text_atomically((fs::path(batch.summary_dir) / "batch.json").string(), j.dump(2) + "\n");
    if (opt.verbosity != Verbosity::quiet) std::fprintf(stderr, "\n%s\n", summary_table(outcomes).c_str());
    log_line(opt.verbosity, std::to_string(ok) + " ok, " + std::to_string(failed) + " failed, " +
                                std::to_string(skipped) + " up to date" + (interrupted ? ", interrupted" : "") +
                                "; summary in " + (fs::path(batch.summary_dir) / "batch.json").string());
    if (out) *out = outcomes;
    if (interrupted) return int(ExitCode::interrupted);
    return failed ? int(ExitCode::batch_failed) : 0;
}

}  // namespace stackalign
