#include "gpu_start.hpp"

#include <algorithm>

#include "cuda_api.hpp"

namespace stackalign {

GpuStart::GpuStart(const Device& device, const std::vector<int>& gpus) {
    if (device.backend != Backend::cuda) return;
    std::vector<int> all = gpus;
    if (std::find(all.begin(), all.end(), device.gpu) == all.end()) all.push_back(device.gpu);
    for (int gpu : all)
        threads_.emplace_back([gpu] {
            // A failure here is the searcher's to report, with its own
            // message, when it asks for the same device.
            try {
                cuda::create_context(gpu);
            } catch (...) {
            }
        });
}

GpuStart::~GpuStart() {
    for (std::thread& t : threads_) t.join();
}

}  // namespace stackalign
