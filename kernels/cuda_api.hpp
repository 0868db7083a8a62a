// What the rest of the program asks of the CUDA runtime, as plain C++: host
// code includes this, never a CUDA header. The operations' GPU twins are
// declared beside their CPU twins in kernels/<op>/<op>.hpp. In a build
// without nvcc, cuda_unavailable.cpp defines all of them and says why the
// GPU cannot be used.
#pragma once
#include <string>

namespace stackalign::cuda {

bool compiled_in();
// Called by the CLI before its first CUDA call: two hardware work queues per
// GPU (CUDA_DEVICE_MAX_CONNECTIONS) unless the environment already names a
// number. The driver's default 8 cost a lone job 0.04-0.08 s of context
// creation and exit on the H200 host, with the same shifts and no slower
// search for its 4 searchers (docs/benchmarks.md, session 26). The Python
// module leaves it alone: its process keeps one context for every call, and
// the setting would reach the user's other CUDA libraries.
void set_work_queues();
// CUDA_DEVICE_MAX_CONNECTIONS as the process has it ("" when unset): run.json.
std::string work_queues();
int device_count();                       // 0 when no usable GPU or driver
std::string device_name(int gpu);
// Makes `gpu` the calling thread's device (cudaSetDevice, with a message
// naming the index): a thread starts on device 0, whatever another chose.
void select_device(int gpu);

}  // namespace stackalign::cuda
