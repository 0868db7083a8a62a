// What every pipeline takes from the command line, and the backend choice
// they share.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../kernels/pair_searcher.hpp"
#include "../src/config/config.hpp"
#include "../src/core/progress.hpp"

namespace stackalign {

struct RunOptions {
    std::optional<std::string> backend;  // overrides [device] backend
    bool resume = false;                 // skip jobs whose outputs are complete and up to date
    std::size_t frame_cache_bytes = 0;   // input frames kept in memory; 0 = 40% of physical memory
    int threads = 0;                     // 0 = OpenMP default
    Verbosity verbosity = Verbosity::normal;
};

// Picks the backend from the request ("auto" | "cpu" | "cuda"); asking for
// cuda where none is usable is an UnsupportedError, never a silent fallback.
Backend choose_backend(const std::string& requested, int gpu);
// "cpu" or "cuda (GPU n: name)", for plans.
std::string describe_backend(Backend b, int gpu);
std::unique_ptr<PairSearcher> make_pair_searcher(Backend b, const SearchSetup& setup);

// [search] method, metric, histogram and mtb_band into a setup; the sampled
// bin-partitioned histogram becomes the bin-partitioned strategy with a
// sample stride, which the CPU twin honours as well.
void apply_search_choice(const SearchConfig& search, SearchSetup& setup);

// Creates the output folder and removes a previous run.json, so a run that
// dies part-way cannot leave old and new files that together look complete
// (run.json is written last). Returns the path run.json will have.
std::string start_output_dir(const std::string& dir);

// The GPUs of [device] gpus ("all": every GPU the driver reports); empty
// when unset or when the backend is not cuda. UnsupportedError for a GPU
// this machine does not have.
std::vector<int> resolve_gpus(const DeviceConfig& device, Backend backend);

// What a job's outputs depend on: its resolved config and, per input file,
// path, size and modification time (as make judges freshness; hashing
// gigabytes of pixels would cost as much as aligning them). Recorded in
// run.json; --resume skips a job whose run.json has the same.
std::string job_fingerprint(const Config& cfg);
bool outputs_up_to_date(const Config& cfg);

// What every run.json starts with: versions, the config file, the job's fingerprint.
nlohmann::ordered_json run_json_header(const Config& cfg);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace stackalign
