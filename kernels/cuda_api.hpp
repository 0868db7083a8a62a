// What the rest of the program asks of the CUDA runtime, as plain C++: host
// code includes this, never a CUDA header. The operations' GPU twins are
// declared beside their CPU twins in kernels/<op>/<op>.hpp. In a build
// without nvcc, cuda_unavailable.cpp defines all of them and says why the
// GPU cannot be used.
#pragma once
#include <string>

namespace stackalign::cuda {

bool compiled_in();
int device_count();                       // 0 when no usable GPU or driver
std::string device_name(int gpu);
// Makes `gpu` the calling thread's device (cudaSetDevice, with a message
// naming the index): a thread starts on device 0, whatever another chose.
void select_device(int gpu);

}  // namespace stackalign::cuda
