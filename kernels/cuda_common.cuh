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
// The current device's SM count.
int multiprocessor_count();

// After every launch: configuration errors show up here, faults at the next sync.
#define CUDA_CHECK_LAUNCH(name) ::stackalign::cuda::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__)

// Device memory and streams kept for reuse by the process (device_pool.cu).
// Why: a job runs three searches (two smoothing trials, then the pairs),
// each with new searchers, and each searcher made its buffers and stream
// anew. On the H100 host the standard job's threads spent 113-127 ms in
// 357 cudaMalloc calls and 12-16 ms creating 27 streams (the tilt series
// 38-47 ms in 331 calls), and each cudaFree waited for the device's queued
// work. With the pool: 109 and 105 calls, 15 and 4 streams, the jobs 4-8 %
// sooner, the same bytes out (`bench stages`, H100).
struct DeviceBlock {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    int device = -1;
};
// A block of at least `bytes` on the current device: a kept one whose
// users' work is known to be finished, else a new one.
DeviceBlock take_device_block(std::size_t bytes);
// Back to the pool (work queued before may still use it), or freed where
// the pool holds its limit.
void give_device_block(const DeviceBlock& block) noexcept;
// The same for a block no queued work uses (its stream synchronised since
// its last use): served again at once, without waiting for the device.
void give_idle_device_block(const DeviceBlock& block) noexcept;
// A non-blocking stream of `priority` on `device` (the current one);
// given back with work possibly still queued on it, which the next user's
// follows.
cudaStream_t take_stream(int device, int priority);
void give_stream(cudaStream_t stream, int device, int priority) noexcept;

// Owning device allocation; grows on demand, never shrinks.
template <typename T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t n) { reserve(n); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept : block_(std::exchange(o.block_, {})), n_(std::exchange(o.n_, 0)) {}
    ~DeviceBuffer() { give_device_block(block_); }
    // Back to the pool now, as idle (give_idle_device_block): the caller
    // has synchronised every stream that used it.
    void give_back_idle() noexcept {
        give_idle_device_block(std::exchange(block_, {}));
        n_ = 0;
    }
    void reserve(std::size_t n) {
        if (n <= n_) return;
        give_device_block(std::exchange(block_, {}));
        n_ = 0;
        block_ = take_device_block(n * sizeof(T));
        n_ = n;
    }
    T* get() const { return static_cast<T*>(block_.ptr); }
    std::size_t size() const { return n_; }

private:
    DeviceBlock block_;
    std::size_t n_ = 0;
};

// An owned non-blocking stream.
class Stream {
public:
    Stream() : Stream(false) {}
    // The current device's highest priority when `first`, else the default.
    explicit Stream(bool first) {
        int least = 0, greatest = 0;
        CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
        CUDA_CHECK(cudaGetDevice(&device_));
        priority_ = first ? greatest : least;
        s_ = take_stream(device_, priority_);
    }
    ~Stream() { give_stream(s_, device_, priority_); }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    operator cudaStream_t() const { return s_; }

private:
    cudaStream_t s_{};
    int device_ = 0, priority_ = 0;
};

}  // namespace stackalign::cuda
