// Where a kernel runs: the CPU (OpenMP, the reference) or one CUDA GPU, and
// how a run's request ("auto" | "cpu" | "cuda") becomes that choice. Every
// operation's entry point (kernels/<op>/<op>.hpp) takes a Device and sends
// the call to its cpu:: or cuda:: twin.
#pragma once
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

}  // namespace stackalign
