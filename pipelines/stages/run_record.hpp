// run.json, the record of a finished job, written last: so a run that dies
// part-way leaves no run.json, and --resume never mistakes it for done.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/core/peak_memory.hpp"
#include "../plan/provenance.hpp"
#include "../run_options.hpp"

namespace stackalign {

// Creates the output folder and removes a previous run.json, so old and new
// files cannot together look complete, and the temporary files of runs that
// were killed. Returns the path run.json will have.
std::string start_output_dir(const std::string& dir);

// What every run.json starts with: versions, the config file and its
// resolved keys, the job's fingerprint.
nlohmann::ordered_json run_record(const Provenance& provenance);

// Stage seconds, threads and peak memory (`peak`, made at the job's
// start), then the file itself.
void finish_run_record(const std::string& path, nlohmann::ordered_json& record, const StageTimes& times,
                       double total_seconds, const PeakMemory& peak);

// One job's bookkeeping from its start to its run.json, so a pipeline reads
// as its stages: the clock and the peak memory from the start, the output
// folder made ready, each stage's seconds, and at the end run.json and the
// log's last line.
class JobBook {
public:
    JobBook(const std::string& output_dir, const RunOptions& opt);

    StageTimes times;

    // Runs f() and adds its seconds to `stage`.
    template <typename F>
    decltype(auto) timed(double StageTimes::*stage, F&& f) {
        const StageClock clock{times.*stage, Clock::now()};
        return f();
    }
    double seconds() const { return seconds_since(start_); }

    // run.json: run_record(provenance), then `details`, then the stage
    // seconds, threads and peak memory.
    void write_record(const Provenance& provenance, const nlohmann::ordered_json& details) const;
    // "done in T s<summary> (read a, ...); outputs in DIR<verdict>", naming `stages`.
    void log_done(const std::string& summary, const std::vector<std::string>& stages,
                  const std::string& verdict = "") const;

private:
    struct StageClock {
        double& into;
        Clock::time_point from;
        ~StageClock() { into += seconds_since(from); }
    };
    Clock::time_point start_ = Clock::now();
    PeakMemory peak_;
    std::string dir_, run_json_;
    Verbosity verbosity_;
};

}  // namespace stackalign
