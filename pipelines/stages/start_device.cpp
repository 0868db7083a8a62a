#include "start_device.hpp"

#include <algorithm>
#include <thread>

#include "../../kernels/cuda_api.hpp"
#include "../../src/io/read_ahead.hpp"

namespace stackalign {

DeviceStart start_device(StackPlan& plan, const Config& cfg, const RunOptions& opt, FrameReader& frames,
                         std::size_t cache_bytes) {
    const auto t = Clock::now();
    DeviceStart out;
    std::vector<int> ahead;
    if (opt.backend.value_or(cfg.device.backend) != BackendRequest::cpu) {
        const std::size_t frame_bytes = std::size_t(plan.width) * plan.height * bytes_per_pixel(plan.type);
        ahead = views_that_fit(plan.kept, frame_bytes, cache_bytes);
    }
    // Reading is page-cache copies and decoding; a few threads are enough
    // and leave the rest of the host to the driver.
    ReadAhead reading(frames, ahead, std::clamp(int(std::thread::hardware_concurrency()) / 2, 1, 8));
    plan_device(plan, cfg, opt);
    if (plan.device.backend == Backend::cuda) {
        for (int gpu : plan.gpus)
            if (gpu != plan.device.gpu) cuda::start_context(gpu);
        cuda::start_context(plan.device.gpu);  // last: the calling thread's device from now on
    }
    out.frames_read = reading.stop();
    out.seconds = seconds_since(t);
    return out;
}

}  // namespace stackalign
