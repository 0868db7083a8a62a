// Helpers shared by the .cu files only: every CUDA call goes through
// CUDA_CHECK, which turns a failure into an InternalError naming the call.
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "../src/core/error.hpp"
#include "cuda_api.hpp"

namespace stackalign::cuda {

inline void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
    if (e != cudaSuccess)
        throw InternalError(std::string("CUDA error: ") + cudaGetErrorString(e) + " in " + what + " (" + file + ":" +
                            std::to_string(line) + ")");
}
#define CUDA_CHECK(call) ::stackalign::cuda::check_cuda((call), #call, __FILE__, __LINE__)
// After every launch: configuration errors show up here, faults at the next sync.
#define CUDA_CHECK_LAUNCH(name) ::stackalign::cuda::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__)

// Owning device allocation; grows on demand, never shrinks.
template <typename T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t n) { reserve(n); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), n_(std::exchange(o.n_, 0)) {}
    ~DeviceBuffer() { cudaFree(ptr_); }
    void reserve(std::size_t n) {
        if (n <= n_) return;
        cudaFree(ptr_);
        ptr_ = nullptr;
        n_ = 0;
        CUDA_CHECK(cudaMalloc(&ptr_, n * sizeof(T)));
        n_ = n;
    }
    T* get() const { return ptr_; }
    std::size_t size() const { return n_; }

private:
    T* ptr_ = nullptr;
    std::size_t n_ = 0;
};


// An owned non-blocking stream.
class Stream {
public:
    Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
    // The current device's highest priority when `first`, else the default.
    explicit Stream(bool first) {
        int least = 0, greatest = 0;
        CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        CUDA_CHECK(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, first ? greatest : least));
    }
    ~Stream() { cudaStreamDestroy(s_); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    operator cudaStream_t() const { return s_; }

private:
    cudaStream_t s_{};
};


}  // namespace stackalign::cuda
