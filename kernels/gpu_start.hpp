// The GPUs' contexts made beside the host's first work. A CUDA process makes
// a device's context at the first call that needs one, which here is the
// first searcher's, after the plan, the first reads and the noise estimate;
// made on a thread of its own from the job's start, it is ready by then or
// sooner. `stackalign check --backend cuda` took 0.15 s on the H100 host,
// against a few hundredths for small jobs' host work before the first load.
#pragma once
#include <thread>
#include <vector>

#include "backend.hpp"

namespace stackalign {

class GpuStart {
public:
    // Starts `device`'s GPU and every one in `gpus`; nothing for the CPU backend.
    GpuStart(const Device& device, const std::vector<int>& gpus);
    // Waits for the contexts: the CUDA runtime's teardown at exit must not
    // meet a context still being made.
    ~GpuStart();
    GpuStart(const GpuStart&) = delete;
    GpuStart& operator=(const GpuStart&) = delete;

private:
    std::vector<std::thread> threads_;
};

}  // namespace stackalign
