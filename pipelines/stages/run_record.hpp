// run.json, the record of a finished job, written last: so a run that dies
// part-way leaves no run.json, and --resume never mistakes it for done.
#pragma once
#include <string>

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

}  // namespace stackalign
