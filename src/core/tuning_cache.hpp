// Choices among equivalent GPU ways of doing one thing (the same answers,
// different speeds), timed in one process and remembered for the next, as
// FFTW keeps its wisdom and Triton its autotuning. Timing the search's
// histogram strategies took 12.5-15 ms of the tilt series and 22-26 ms of
// the standard job while the other searchers waited (`bench stages`,
// H100), in every process: every task of a Slurm array paid it.
//
// The file is JSON, one entry per key; a key names the GPU model, its
// driver and runtime, this build of stackalign and the problem's shape, so
// an entry is only ever read back by the same code on the same kind of GPU.
// A missing, unreadable or foreign file is an empty cache: the choice is
// timed again, as without one. The cache is never needed for a result.
#pragma once
#include <optional>
#include <string>

namespace stackalign {

struct RememberedChoice {
    std::string choice;  // the way's name (EnumNames)
    std::string times;   // each way's time when it was chosen, "name 0.123 ms, ..."
};

// The cache file: $STACKALIGN_TUNING_CACHE if set ("off" or "": none), else
// $XDG_CACHE_HOME/stackalign/gpu_tuning.json, else
// $HOME/.cache/stackalign/gpu_tuning.json; "" for none.
std::string tuning_cache_path();

// The choice remembered under `key` in the file at `path`, if any.
std::optional<RememberedChoice> recall_tuning(const std::string& path, const std::string& key);

// Adds (or replaces) `key` in the file at `path`, keeping what other
// processes wrote there and at most kTuningCacheEntries entries, the newest.
// Returns "" or why the file could not be written (a read-only home, a full
// disk): the choice then lasts for this process only.
std::string remember_tuning(const std::string& path, const std::string& key, const RememberedChoice& choice);

// Entries older than the newest this many are dropped on writing: each
// rebuild starts new keys, and nothing else would ever remove the old ones.
constexpr int kTuningCacheEntries = 256;

// This build of the code: its version, and the size and modification time
// of the file that holds it (the executable, or the Python module). A
// rebuild may change a way's speed, so its choices are timed afresh. ""
// where the file cannot be found: nothing is then remembered.
std::string build_identity();

}  // namespace stackalign
