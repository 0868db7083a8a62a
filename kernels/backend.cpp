#include "backend.hpp"

#include "../src/core/error.hpp"
#include "cuda_api.hpp"

namespace stackalign {

Backend choose_backend(BackendRequest requested, int gpu) {
    if (requested == BackendRequest::cpu) return Backend::cpu;
    const int devices = cuda::device_count();
    if (requested == BackendRequest::cuda) {
        if (!cuda::compiled_in())
            throw UnsupportedError("backend \"cuda\" was requested but this stackalign was built without CUDA "
                                   "(no nvcc at build time); install the CUDA toolkit and rebuild, or use --backend cpu");
        if (devices == 0)
            throw UnsupportedError("backend \"cuda\" was requested but no CUDA GPU is usable on this machine "
                                   "(driver reports 0 devices); use --backend cpu or auto");
        if (gpu >= devices)
            throw UnsupportedError("[device] gpu = " + std::to_string(gpu) + " but this machine has " +
                                   std::to_string(devices) + " CUDA device(s) (0-based)");
        return Backend::cuda;
    }
    return devices > gpu ? Backend::cuda : Backend::cpu;
}

std::string describe_backend(Backend b, int gpu) {
    return b == Backend::cuda ? "cuda (GPU " + std::to_string(gpu) + ": " + cuda::device_name(gpu) + ")" : "cpu";
}

std::vector<int> resolve_gpus(const std::vector<int>& requested, Backend backend) {
    if (requested.empty() || backend != Backend::cuda) return {};
    const int count = cuda::device_count();
    if (requested == std::vector<int>{-1}) {
        std::vector<int> all;
        for (int g = 0; g < count; ++g) all.push_back(g);
        return all;
    }
    for (int g : requested)
        if (g >= count)
            throw UnsupportedError("[device] gpus lists GPU " + std::to_string(g) + " but this machine has " +
                                   std::to_string(count));
    return requested;
}

}  // namespace stackalign
