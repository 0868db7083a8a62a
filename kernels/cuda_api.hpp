// What the rest of the program asks of the CUDA runtime, as plain C++: host
// code includes this, never a CUDA header. The operations' GPU twins are
// declared beside their CPU twins in kernels/<op>/<op>.hpp. In a build
// without nvcc, cuda_unavailable.cpp defines all of them and says why the
// GPU cannot be used.
#pragma once
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

namespace stackalign::cuda {

bool compiled_in();
// Called by the CLI before its first CUDA call: two hardware work queues per
// GPU (CUDA_DEVICE_MAX_CONNECTIONS) unless the environment already names a
// number. The driver's default 8 cost a bare process 0.05-0.1 s more to
// create and release its context on the H200 host, and the bench jobs
// 0.07-0.14 s more from start to exit, with the same shifts and no slower
// search for their 4 searchers (`bash bench/device.sh floor`, H200); a
// batch of four 61 x 4096^2 acquisition series at two jobs at once (eight
// searchers) took 5.33 s a series with 2, 5.97 with 8 and 5.90 with 32
// (`bench stages acquisition`'s job as a batch, H200). The Python
// module leaves it alone: its process keeps one context for every call, and
// the setting would reach the user's other CUDA libraries.
void set_work_queues();
// CUDA_DEVICE_MAX_CONNECTIONS as the process has it ("" when unset): run.json.
std::string work_queues();
int device_count();                       // 0 when no usable GPU or driver
std::string device_name(int gpu);
// Device allocations the process made, and requests served from memory it
// had already allocated (device_pool.cu keeps what searchers give back).
struct DeviceMemoryCounts {
    long long allocated = 0, reused = 0;
};
DeviceMemoryCounts device_memory_counts();
// Makes `gpu` the calling thread's device (cudaSetDevice, with a message
// naming the index): a thread starts on device 0, whatever another chose.
void select_device(int gpu);
// Whether this process has made `gpu`'s context already (an earlier job's,
// or this job's ContextsStarting): a job there pays no GPU start, which
// `backend = "auto"` weighs (backend_cost.hpp). Asks nothing of the driver,
// whose own start is most of the cost in a fresh process.
bool context_made(int gpu);

// Page-locks host memory that is copied to the GPUs again and again
// (cudaHostRegister, portable: pinned for every GPU's context), through
// `gpu`'s context; the calling thread's device is left as it was. False
// where the driver refuses (memory it already locked, no GPU): the memory
// stays pageable, whose copies are slower but the same.
bool lock_pages(void* data, std::size_t bytes, int gpu);
void unlock_pages(void* data);

// Host memory of at least this many bytes that is copied to the GPU again
// and again is page-locked (the frames a CUDA job keeps: gpu_page_locking
// in pipelines/stages/preprocess.hpp; PagesLocked). Measured side by side
// on the H200 host (`bash bench/device.sh acquisition`, `build/bench
// loads`, `build/bench stages "tilt series"`): 61 x 4096^2 uint16 frames
// (32 MB) locked, a stretched load took 5.6 ms alone and 11.5 with four
// searchers at once (pageable: 9.9 and 20.3), and the job 7.08-7.27 s wall
// (pageable 7.80-7.84); the 121 x 512^2 float series' 1 MB frames locked
// made its job slower, 1.15-1.18 s against 1.12-1.13 (locking a frame
// costs about what its few copies save). The line lies between the two:
// 1024^2 float frames stay pageable, 2048^2 uint16 ones are locked.
constexpr std::size_t kLockLeastBytes = std::size_t(8) << 20;

// A buffer that a loop refills and copies to the GPU again and again, kept
// page-locked while this lives where it holds at least `least` bytes; a
// buffer that moved is unlocked at its old place first.
class PagesLocked {
public:
    PagesLocked() = default;
    ~PagesLocked() { release(); }
    PagesLocked(const PagesLocked&) = delete;
    PagesLocked& operator=(const PagesLocked&) = delete;
    void hold(std::vector<unsigned char>& bytes, int gpu, std::size_t least = kLockLeastBytes) {
        if (bytes.data() == data_ && bytes.size() == bytes_) return;
        release();
        if (!bytes.empty() && bytes.size() >= least && lock_pages(bytes.data(), bytes.size(), gpu))
            data_ = bytes.data(), bytes_ = bytes.size();
    }

private:
    void release() {
        if (data_) unlock_pages(data_);
        data_ = nullptr, bytes_ = 0;
    }
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
};

// The contexts of `gpus` made on a thread of their own while the job's
// host work before its first GPU call (the output folder, the frames'
// noise, the first views' decoding) goes on; the job's first CUDA call then
// waits only for what is left (the runtime makes a context once, whichever
// thread asks). The smoothing trials ended 25-35 ms sooner on the H100
// host; medians of eight, start to exit: standard job 0.621 s against
// 0.653, X-ray-sized 0.350 against 0.378, drift 0.362 against 0.379 (tilt
// series 0.548 against 0.550; `bench stages`, H100). The
// destructor waits for the thread. No GPUs, or a build without CUDA:
// nothing is started.
class ContextsStarting {
public:
    explicit ContextsStarting(const std::vector<int>& gpus);
    ~ContextsStarting();
    ContextsStarting(const ContextsStarting&) = delete;
    ContextsStarting& operator=(const ContextsStarting&) = delete;

private:
    std::thread thread_;
};

}  // namespace stackalign::cuda
