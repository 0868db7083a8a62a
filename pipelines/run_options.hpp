// What every pipeline takes from the command line, and the backend choice
// they share.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "../kernels/pair_searcher.hpp"
#include "../src/progress.hpp"

namespace stackalign {

struct RunOptions {
    std::optional<std::string> backend;  // overrides [device] backend
    int threads = 0;                     // 0 = OpenMP default
    Verbosity verbosity = Verbosity::normal;
};

// Picks the backend from the request ("auto" | "cpu" | "cuda"); asking for
// cuda where none is usable is an UnsupportedError, never a silent fallback.
Backend choose_backend(const std::string& requested, int gpu);
// "cpu" or "cuda (GPU n: name)", for plans.
std::string describe_backend(Backend b, int gpu);
std::unique_ptr<PairSearcher> make_pair_searcher(Backend b, const SearchSetup& setup);

// Creates the output folder and removes a previous run.json, so a run that
// dies part-way cannot leave old and new files that together look complete
// (run.json is written last). Returns the path run.json will have.
std::string start_output_dir(const std::string& dir);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace stackalign
