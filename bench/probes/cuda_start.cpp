// The floor of a GPU process on this machine: how long the CUDA driver's
// start, a context's creation and the process's exit take with nothing
// else in the process. Usage: cuda_start STEPS, STEPS letters of
// "i" (driver: cudaGetDeviceCount), "c" (context: cudaFree(0)), "a" (a
// context on every GPU, each made on its own thread at once, as a batch
// over several GPUs makes them),
// "m" (64 allocations of 16 MB, set), "s" (8 streams), "r" (cudaDeviceReset),
// "h" (then hold the GPU 20 s: another process's start beside it), "x"
// (leave by std::_Exit, without the runtime's teardown at exit); the exit
// is timed by the caller (bench/timeline.py).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    const auto t0 = std::chrono::steady_clock::now();
    auto at = [&](const char* what) {
        std::fprintf(stderr, "%.4f %s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), what);
    };
    const char* steps = argc > 1 ? argv[1] : "ic";
    int n = 0;
    if (std::strchr(steps, 'i')) cudaGetDeviceCount(&n), at("driver started (device count)");
    if (std::strchr(steps, 'c')) cudaFree(nullptr), at("context created");
    if (std::strchr(steps, 'a')) {
        std::vector<std::thread> makers;
        for (int d = 0; d < n; ++d) makers.emplace_back([d] { cudaSetDevice(d), cudaFree(nullptr); });
        for (std::thread& t : makers) t.join();
        at("a context on every GPU");
    }
    std::vector<void*> blocks;
    if (std::strchr(steps, 'm')) {
        for (int k = 0; k < 64; ++k) {
            void* p = nullptr;
            cudaMalloc(&p, 16 << 20);
            cudaMemset(p, 0, 16 << 20);
            blocks.push_back(p);
        }
        cudaDeviceSynchronize();
        at("64 x 16 MB allocated and set");
    }
    std::vector<cudaStream_t> streams(8);
    if (std::strchr(steps, 's')) {
        for (cudaStream_t& s : streams) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        at("8 streams");
    }
    if (std::strchr(steps, 'r')) cudaDeviceReset(), at("device reset");
    if (std::strchr(steps, 'h')) std::this_thread::sleep_for(std::chrono::seconds(20));
    if (std::strchr(steps, 'x')) at("_Exit"), std::fflush(nullptr), std::_Exit(0);
    at("returning from main");
    return 0;
}
