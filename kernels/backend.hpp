// Where a kernel runs: the CPU (OpenMP, the reference) or one CUDA GPU, and
// how a run's request ("auto" | "cpu" | "cuda") becomes that choice. Every
// operation's entry point (kernels/<op>/<op>.hpp) takes a Device and sends
// the call to its cpu:: or cuda:: twin.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "../src/core/choices.hpp"
#include "../src/core/enum_names.hpp"

namespace stackalign {

enum class Backend { cpu, cuda };
template <>
struct EnumNames<Backend> {
    static constexpr const char* names[] = {"cpu", "cuda"};
};
inline std::string to_string(Backend b) { return name_of(b); }

struct Device {
    Backend backend = Backend::cpu;
    int gpu = 0;  // CUDA device index when backend is cuda
};

// cuda where one is usable and asked for or allowed ("auto"); asking for
// cuda where none is usable is an UnsupportedError, never a silent fallback.
Backend choose_backend(BackendRequest requested, int gpu);
// "cpu" or "cuda (GPU n: name)", for plans.
std::string describe_backend(Backend b, int gpu);

// The GPUs a batch or a long series is spread over: `requested` as in
// [device] gpus ({-1} = every GPU the driver reports); empty when none were
// requested or the backend is not cuda. UnsupportedError for a GPU this
// machine does not have.
std::vector<int> resolve_gpus(const std::vector<int>& requested, Backend backend);

// Host memory of at least this many bytes that is copied to the GPU again
// and again is page-locked (gpu_page_locking in pipelines/stages/preprocess.hpp,
// PagesLocked). Measured side by side on the H200 host (`bash
// bench/device.sh acquisition`, `build/bench loads`, `build/bench stages
// "tilt series"`): 61 x 4096^2 uint16 frames (32 MB) locked, a stretched
// load took 5.6 ms alone and 11.5 with four searchers at once (pageable:
// 9.9 and 20.3), and the job 7.08-7.27 s wall (pageable 7.80-7.84); the
// 121 x 512^2 float series' 1 MB frames locked made its job slower,
// 1.15-1.18 s against 1.12-1.13 (locking a frame costs about what its few
// copies save). The line lies between the two: 1024^2 float frames stay
// pageable, 2048^2 uint16 ones are locked.
constexpr std::size_t kLockLeastBytes = std::size_t(8) << 20;

// A buffer that a loop refills and copies to the GPU again and again, kept
// page-locked (as gpu_page_locking) while this lives; a buffer that moved
// is unlocked at its old place first.
class PagesLocked {
public:
    PagesLocked() = default;
    ~PagesLocked() { release(); }
    PagesLocked(const PagesLocked&) = delete;
    PagesLocked& operator=(const PagesLocked&) = delete;
    void hold(std::vector<unsigned char>& bytes, int gpu);

private:
    void release();
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
};

}  // namespace stackalign
