// Choosing among equivalent ways of doing one thing on the GPU (the same
// answers, different speeds) by timing them: the search's histogram
// strategy (pair_searcher_cuda.cu) and the refinement's way of adding its
// Parzen histograms (refine/refine_cuda.cu). Host code, so that the
// choosing is tested without a GPU (tests/test_tuning_cache.cpp); the
// timer, the keys and the entry point the GPU code calls (tuned_on_gpu)
// are in tuned_choice.cuh.
#pragma once
#include <array>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "../src/core/enum_names.hpp"
#include "../src/core/tuning_cache.hpp"

namespace stackalign {

// One choice per key (a GPU and a problem's shape) in the process, made by
// the first caller to lock it while later callers of the same key wait.
// When searchers that start together each timed the ways themselves, they
// timed them beside one another's work and kept different winners: on the
// standard job (`bash bench/device.sh profile`) 136 searches ran zero-slot at
// 1.76 ms, 69 adaptive at 2.03 ms and 135 shared at 0.75 ms.
template <typename Choice>
struct TunedChoice {
    std::mutex mutex;
    bool done = false;
    Choice choice{};
    std::string summary;     // each way's time, "name 0.123 ms, ..."
    std::string remembered;  // the cache file the choice was read from; "" where timed in this process
    std::string unsaved;     // why the choice timed here could not be written to the cache file, if it could not
    // Counts the way `name` at `ms`, kept if it is the soonest so far.
    void timed(Choice way, const std::string& name, double ms) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %.3f ms", summary.empty() ? "" : ", ", name.c_str(), ms);
        if (summary.empty() || ms < best_ms_) choice = way, best_ms_ = ms;
        summary += buf;
    }
    // How the choice was made, for run.json: "timed on the first <what>: ..."
    // or where it was remembered from.
    std::string how(const std::string& what) const {
        if (!remembered.empty()) return "timed by an earlier run (" + remembered + "): " + summary;
        return "timed on the first " + what + ": " + summary + (unsaved.empty() ? "" : "; not remembered: " + unsaved);
    }

private:
    double best_ms_ = 0;
};

// The entry of `key`, made on first use (entries never move).
template <typename Choice, std::size_t N>
TunedChoice<Choice>& tuned_choice(const std::array<int, N>& key) {
    static std::mutex registry_mutex;
    static std::map<std::array<int, N>, TunedChoice<Choice>> registry;
    const std::lock_guard<std::mutex> lock(registry_mutex);
    return registry[key];
}

// Makes `tuned`'s choice once (the caller holds its mutex): the one
// remembered under `key` in the cache file `cache` if that is still a way
// `allowed` takes, else `time_ways` (which calls tuned.timed for each way)
// and then remembered there. `key` "" or `cache` "" (no file, or no way to
// tell this build from another): timed, and not remembered.
template <typename Choice>
void choose_once(TunedChoice<Choice>& tuned, const std::string& cache, const std::string& key,
                 const std::function<bool(Choice)>& allowed, const std::function<void()>& time_ways) {
    if (tuned.done) return;
    const bool cached = !cache.empty() && !key.empty();
    if (cached)
        if (const std::optional<RememberedChoice> r = recall_tuning(cache, key))
            if (const std::optional<Choice> c = parse_name<Choice>(r->choice); c && allowed(*c)) {
                tuned.choice = *c;
                tuned.summary = r->times;
                tuned.remembered = cache;
                tuned.done = true;
                return;
            }
    time_ways();
    tuned.done = true;
    if (cached) tuned.unsaved = remember_tuning(cache, key, {name_of(tuned.choice), tuned.summary});
}

}  // namespace stackalign
