#include "run_record.hpp"

#include <omp.h>
#include <signal.h>
#include <tiffio.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "../../src/core/version.hpp"
#include "../../src/output/atomic_write.hpp"
#include "../plan/backend_cost.hpp"
#include "../plan/output_names.hpp"

namespace stackalign {

namespace {
// Temporary files of writers that died (SIGKILL, power loss): ".<stem>.partial-<pid><suffixes>"
// whose process is gone. A live one may belong to a run still writing here.
void remove_stale_partials(const std::string& dir) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        const auto at = name.rfind(".partial-");
        if (name.empty() || name[0] != '.' || at == std::string::npos) continue;
        const long pid = std::strtol(name.c_str() + at + 9, nullptr, 10);
        if (pid > 0 && kill(pid_t(pid), 0) != 0 && errno == ESRCH) std::filesystem::remove(e.path(), ec);
    }
}
}  // namespace

std::string start_output_dir(const std::string& dir) {
    prepare_output_dir(dir);
    remove_stale_partials(dir);
    const std::string run_json = (std::filesystem::path(dir) / output_names::run_json).string();
    std::error_code ec;
    std::filesystem::remove(run_json, ec);
    return run_json;
}

nlohmann::ordered_json run_record(const Provenance& provenance) {
    nlohmann::ordered_json j;
    j["stackalign_version"] = STACKALIGN_VERSION;
    j["libtiff"] = TIFFGetVersion();
    j["config_file"] = provenance.config_file;
    j["fingerprint"] = provenance.fingerprint;
    j["config"] = provenance.config;
    return j;
}

void finish_run_record(const std::string& path, nlohmann::ordered_json& j, const StageTimes& times,
                       double total_seconds, const PeakMemory& peak) {
    j["threads"] = omp_get_max_threads();
    j["seconds"] = {{"read", times.read},   {"preprocess", times.preprocess}, {"search", times.search},
                    {"refine", times.refine}, {"projection_matching", times.project},
                    {"apply", times.apply}, {"write", times.write},           {"total", total_seconds}};
    j["peak_memory_mb"] = peak.megabytes();
    j["peak_memory_of"] = peak.of();
    write_text_atomically(path, j.dump(2) + "\n");
}

JobBook::JobBook(const std::string& output_dir, const RunOptions& opt)
    : peak_(opt.own_peak_memory), dir_(output_dir), verbosity_(opt.verbosity) {
    job_started();
    run_json_ = start_output_dir(output_dir);
}

void JobBook::write_record(const Provenance& provenance, const nlohmann::ordered_json& details) const {
    nlohmann::ordered_json record = run_record(provenance);
    record.update(details);
    finish_run_record(run_json_, record, times, seconds(), peak_);
}

void JobBook::log_done(const std::string& summary, const std::vector<std::string>& stages,
                       const std::string& verdict) const {
    const std::map<std::string, double> of = {{"read", times.read},     {"preprocess", times.preprocess},
                                              {"search", times.search}, {"refine", times.refine},
                                              {"projection matching", times.project},
                                              {"apply", times.apply},   {"write", times.write}};
    std::ostringstream done;
    done.precision(3);
    done << "done in " << seconds() << " s" << summary << " (";
    for (std::size_t k = 0; k < stages.size(); ++k) done << (k ? ", " : "") << stages[k] << " " << of.at(stages[k]);
    done << "); outputs in " << dir_ << verdict;
    log_line(verbosity_, done.str());
}

}  // namespace stackalign
