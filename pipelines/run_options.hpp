// What every pipeline takes from the command line, and the backend choice
// they share.
#pragma once
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

}  // namespace stackalign
