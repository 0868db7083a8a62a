// Choosing among equivalent ways of doing one thing on the GPU (the same
// answers, different speeds) by timing them: the search's histogram
// strategy (pair_searcher_cuda.cu) and the refinement's way of adding its
// Parzen histograms (refine/refine_cuda.cu).
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "cuda_common.cuh"

namespace stackalign::cuda {

// Milliseconds of the work `queue` puts on stream `s`, timed by events on it.
template <typename Queue>
double timed_ms(cudaStream_t s, const Queue& queue) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start, s));
    queue();
    CUDA_CHECK(cudaEventRecord(stop, s));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return ms;
}

// One choice per key (a GPU and a problem's shape) in the process, made by
// the first caller to lock it while later callers of the same key wait.
// When searchers that start together each timed the ways themselves, they
// timed them beside one another's work and kept different winners: on the
// standard job (Nsight Compute, session 21) 136 searches ran zero-slot at
// 1.76 ms, 69 adaptive at 2.03 ms and 135 shared at 0.75 ms.
template <typename Choice>
struct TunedChoice {
    std::mutex mutex;
    bool done = false;
    Choice choice{};
    std::string summary;  // each way's time, "name 0.123 ms, ..."
    // Counts the way `name` at `ms`, kept if it is the soonest so far.
    void timed(Choice way, const std::string& name, double ms) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %.3f ms", summary.empty() ? "" : ", ", name.c_str(), ms);
        if (summary.empty() || ms < best_ms_) choice = way, best_ms_ = ms;
        summary += buf;
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

}  // namespace stackalign::cuda
