#include <mutex>
#include <set>

#include "cuda_api.hpp"
#include "cuda_common.cuh"

namespace stackalign::cuda {
namespace {
std::mutex made_lock;
std::set<int> made;  // GPUs whose context this process has made
void mark_made(int gpu) {
    const std::lock_guard<std::mutex> hold(made_lock);
    made.insert(gpu);
}
}  // namespace

bool context_made(int gpu) {
    const std::lock_guard<std::mutex> hold(made_lock);
    return made.count(gpu) > 0;
}

bool compiled_in() { return true; }

int multiprocessor_count() {
    int device = 0, count = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
}

int device_count() {
    int n = 0;
    // No driver or no GPU is a normal situation here, not an error.
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

std::string device_name(int gpu) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, gpu) != cudaSuccess) return "unknown";
    return p.name;
}

void select_device(int gpu) {
    const int n = device_count();
    if (gpu < 0 || gpu >= n)
        throw UnsupportedError("GPU " + std::to_string(gpu) + " requested but " + std::to_string(n) +
                               " CUDA device(s) are usable");
    CUDA_CHECK(cudaSetDevice(gpu));  // since CUDA 12 this makes the device's context
    mark_made(gpu);
}

bool lock_pages(void* data, std::size_t bytes, int gpu) {
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    const bool locked =
        cudaSetDevice(gpu) == cudaSuccess && cudaHostRegister(data, bytes, cudaHostRegisterPortable) == cudaSuccess;
    if (!locked) cudaGetLastError();  // not this thread's next error
    cudaSetDevice(previous);
    return locked;
}

void unlock_pages(void* data) {
    if (cudaHostUnregister(data) != cudaSuccess) cudaGetLastError();
}

ContextsStarting::ContextsStarting(const std::vector<int>& gpus) {
    if (gpus.empty()) return;
    thread_ = std::thread([gpus] {
        // Errors are left for the job's own first call, which names them.
        for (int gpu : gpus)
            if (cudaSetDevice(gpu) == cudaSuccess && cudaFree(nullptr) == cudaSuccess) mark_made(gpu);
        cudaGetLastError();
    });
}

ContextsStarting::~ContextsStarting() {
    if (thread_.joinable()) thread_.join();
}

}  // namespace stackalign::cuda
