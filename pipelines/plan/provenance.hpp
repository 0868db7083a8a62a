// What a job's run.json says about where it came from, fixed when the job
// is planned: the config file, the resolved config (through the schema) and
// the job's fingerprint (what --resume compares).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "../../src/config/config.hpp"

namespace stackalign {

struct Provenance {
    std::string config_file;
    nlohmann::ordered_json config;   // every key of the job's mode, resolved
    std::string fingerprint;
};

Provenance provenance_of(const Config& cfg);

// What a job's outputs depend on: its resolved config and, per input file,
// path, size and modification time (as make judges freshness; hashing
// gigabytes of pixels would cost as much as aligning them).
std::string job_fingerprint(const Config& cfg);
// True when <dir>/run.json exists and records this job's fingerprint.
bool outputs_up_to_date(const Config& cfg);

}  // namespace stackalign
