// The process's pool of device blocks and streams (cuda_common.cuh says why).
//
// A block given back may still be read or written by work queued before
// (a searcher's last launches, then its destructor): it is "pending" until
// a device-wide synchronisation begun after it was given back has ended,
// and only then handed out again. Each of a job's three searches meets its
// predecessor's blocks after that one's searchers finished, so the
// synchronisation finds the device idle.
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_common.cuh"

namespace stackalign::cuda {
namespace {

// Bytes a device's pool keeps at most: the standard job (1024^2 frames, 4
// searchers, the apply stage's slots) allocates 241 MB in all, the tilt
// series 82 MB (`bench stages`, H100 host), and the GPU may be shared with
// other processes, or with the user's own CUDA work in a Python session.
// Past it the oldest blocks are freed first.
constexpr std::size_t kMostKeptBytes = std::size_t(1) << 30;
// A kept block serves a request of at least half its size.
constexpr std::size_t kMostWaste = 2;
// Streams a device's pool keeps per priority.
constexpr std::size_t kMostKeptStreams = 64;

struct KeptBlock {
    void* ptr;
    std::size_t bytes;
    std::uint64_t given;  // the pool's count of blocks given back when this one was
};

struct DevicePool {
    std::vector<KeptBlock> ready, pending;  // each oldest first
    std::size_t kept_bytes = 0;             // ready and pending
    std::uint64_t given = 0;
    std::map<int, std::vector<cudaStream_t>> streams;  // by priority
};

struct Pools {
    std::mutex lock;
    std::map<int, DevicePool> devices;
    DeviceMemoryCounts counts;
};

// Never destroyed: blocks and streams given back while the process exits
// (static destructors) still find it; the driver frees what it holds.
Pools& pools() {
    static Pools* p = new Pools;
    return *p;
}

bool serves(const KeptBlock& b, std::size_t bytes) { return b.bytes >= bytes && b.bytes <= bytes * kMostWaste; }

// The smallest ready block that serves `bytes`, taken out; no block if none.
DeviceBlock take_ready(DevicePool& d, std::size_t bytes, int device) {
    auto best = d.ready.end();
    for (auto it = d.ready.begin(); it != d.ready.end(); ++it)
        if (serves(*it, bytes) && (best == d.ready.end() || it->bytes < best->bytes)) best = it;
    if (best == d.ready.end()) return {};
    const DeviceBlock b{best->ptr, best->bytes, device};
    d.kept_bytes -= best->bytes;
    d.ready.erase(best);
    return b;
}

// Waits for the device's queued work (the current device's), then makes
// ready every block given back before the wait began. Called without the
// lock held.
void settle_pending(int device) {
    Pools& all = pools();
    std::uint64_t before;
    {
        const std::lock_guard<std::mutex> hold(all.lock);
        before = all.devices[device].given;
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::lock_guard<std::mutex> hold(all.lock);
    DevicePool& d = all.devices[device];
    const auto settled =
        std::stable_partition(d.pending.begin(), d.pending.end(), [&](const KeptBlock& b) { return b.given <= before; });
    d.ready.insert(d.ready.end(), d.pending.begin(), settled);
    d.pending.erase(d.pending.begin(), settled);
}

// Frees every block the device's pool keeps once its queued work is done,
// so that an allocation the device refused can be tried again.
void release_kept(int device) {
    settle_pending(device);
    Pools& all = pools();
    const std::lock_guard<std::mutex> hold(all.lock);
    DevicePool& d = all.devices[device];
    for (const KeptBlock& b : d.ready) {
        cudaFree(b.ptr);
        d.kept_bytes -= b.bytes;
    }
    d.ready.clear();
}

// What a user can do when the GPU has no room: the jobs at once and the
// searchers are what this program multiplies, the rest is another process's.
std::string out_of_memory_message(int device, std::size_t bytes) {
    std::size_t free = 0, total = 0;
    (void)cudaMemGetInfo(&free, &total);
    auto mb = [](std::size_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MB"; };
    return "GPU " + std::to_string(device) + " has no room for " + mb(bytes) + " more (" + mb(free) + " of " + mb(total) +
           " free): a batch runs jobs at once on each GPU (two unless --jobs-at-once says; 1 runs one at a "
           "time), each with its [device] searchers; other processes on the GPU hold memory too (nvidia-smi "
           "lists them)";
}

}  // namespace

DeviceBlock take_device_block(std::size_t bytes) {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    Pools& all = pools();
    bool settle = false;
    {
        const std::lock_guard<std::mutex> hold(all.lock);
        DevicePool& d = all.devices[device];
        if (const DeviceBlock b = take_ready(d, bytes, device); b.ptr) {
            ++all.counts.reused;
            return b;
        }
        settle = std::any_of(d.pending.begin(), d.pending.end(), [&](const KeptBlock& b) { return serves(b, bytes); });
    }
    if (settle) {
        settle_pending(device);
        const std::lock_guard<std::mutex> hold(all.lock);
        if (const DeviceBlock b = take_ready(all.devices[device], bytes, device); b.ptr) {
            ++all.counts.reused;
            return b;
        }
    }
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError();  // the refusal, not a sticky error
        release_kept(device);
        if (const cudaError_t e = cudaMalloc(&p, bytes); e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            throw InternalError(out_of_memory_message(device, bytes));
        } else {
            CUDA_CHECK(e);
        }
    }
    const std::lock_guard<std::mutex> hold(all.lock);
    ++all.counts.allocated;
    return {p, bytes, device};
}

namespace {
// `block` kept (as ready where `idle`, else pending), or freed where the
// pool holds its limit.
void keep_block(const DeviceBlock& block, bool idle) noexcept {
    if (!block.ptr) return;
    Pools& all = pools();
    std::vector<void*> freed;
    {
        const std::lock_guard<std::mutex> hold(all.lock);
        DevicePool& d = all.devices[block.device];
        // The oldest first, ready ones before pending ones (cudaFree waits
        // for the work that may still use those).
        for (std::vector<KeptBlock>* kept : {&d.ready, &d.pending})
            while (d.kept_bytes + block.bytes > kMostKeptBytes && !kept->empty()) {
                freed.push_back(kept->front().ptr);
                d.kept_bytes -= kept->front().bytes;
                kept->erase(kept->begin());
            }
        if (d.kept_bytes + block.bytes <= kMostKeptBytes) {
            (idle ? d.ready : d.pending).push_back({block.ptr, block.bytes, ++d.given});
            d.kept_bytes += block.bytes;
        } else {
            freed.push_back(block.ptr);
        }
    }
    for (void* p : freed) cudaFree(p);  // any device: unified addressing
}
}  // namespace

void give_device_block(const DeviceBlock& block) noexcept { keep_block(block, false); }

void give_idle_device_block(const DeviceBlock& block) noexcept { keep_block(block, true); }

cudaStream_t take_stream(int device, int priority) {
    Pools& all = pools();
    {
        const std::lock_guard<std::mutex> hold(all.lock);
        std::vector<cudaStream_t>& kept = all.devices[device].streams[priority];
        if (!kept.empty()) {
            const cudaStream_t s = kept.back();
            kept.pop_back();
            return s;
        }
    }
    cudaStream_t s{};
    CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
    return s;
}

void give_stream(cudaStream_t stream, int device, int priority) noexcept {
    if (!stream) return;
    {
        Pools& all = pools();
        const std::lock_guard<std::mutex> hold(all.lock);
        std::vector<cudaStream_t>& kept = all.devices[device].streams[priority];
        if (kept.size() < kMostKeptStreams) {
            kept.push_back(stream);
            return;
        }
    }
    cudaStreamDestroy(stream);
}

DeviceMemoryCounts device_memory_counts() {
    Pools& all = pools();
    const std::lock_guard<std::mutex> hold(all.lock);
    return all.counts;
}

}  // namespace stackalign::cuda
