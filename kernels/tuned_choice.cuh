// The GPU half of tuned_choice.hpp: the event timer the ways are timed
// with, and the cache keys that tell one GPU, driver and build from another.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <functional>
#include <mutex>
#include <string>

#include "cuda_common.cuh"
#include "tuned_choice.hpp"

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

// The cache key of a choice of kind `what` for GPU `gpu` and a problem of
// shape `shape`: the GPU's model and compute capability (not its index:
// two of one model share their choices), its driver and runtime, and this
// build (build_identity). "" where this build cannot be told apart.
template <std::size_t N>
std::string tuning_key(const char* what, int gpu, const std::array<int, N>& shape) {
    const std::string build = build_identity();
    if (build.empty()) return "";
    cudaDeviceProp p{};
    int driver = 0, runtime = 0;
    if (cudaGetDeviceProperties(&p, gpu) != cudaSuccess || cudaDriverGetVersion(&driver) != cudaSuccess ||
        cudaRuntimeGetVersion(&runtime) != cudaSuccess)
        return "";
    std::string key = std::string(what) + " | " + p.name + " sm_" + std::to_string(p.major) + std::to_string(p.minor) +
                      " " + std::to_string(p.multiProcessorCount) + " SMs | driver " + std::to_string(driver) +
                      " runtime " + std::to_string(runtime) + " | stackalign " + build + " |";
    for (const int v : shape) key += " " + std::to_string(v);
    return key;
}

// The choice of kind `what` on GPU `gpu` for a problem of shape `shape`:
// made once in the process (tuned_choice, keyed by the GPU and the shape)
// by reading the cache file or by `time_ways` (which calls tuned.timed for
// each way), as choose_once says; later callers of the key wait for it and
// get it as it was made. The key for the file is made only where the
// choice is still to be made.
template <typename Choice, std::size_t N>
const TunedChoice<Choice>& tuned_on_gpu(const char* what, int gpu, const std::array<int, N>& shape,
                                        const std::function<bool(Choice)>& allowed,
                                        const std::function<void(TunedChoice<Choice>&)>& time_ways) {
    std::array<int, N + 1> in_process{gpu};
    std::copy(shape.begin(), shape.end(), in_process.begin() + 1);
    TunedChoice<Choice>& tuned = tuned_choice<Choice>(in_process);
    const std::lock_guard<std::mutex> lock(tuned.mutex);
    if (!tuned.done)
        choose_once<Choice>(tuned, tuning_cache_path(), tuning_key(what, gpu, shape), allowed, [&] { time_ways(tuned); });
    return tuned;
}

}  // namespace stackalign::cuda
