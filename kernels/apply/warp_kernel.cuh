// The kernel that resamples a frame through a linear transform on the GPU:
// warped_pixel (src/alignment/frame_warp.hpp) at every pixel, one thread per
// pixel of a row (grid: columns / blockDim.x, rows). The search's stretched
// and turned views and the apply stage's turned frames both use it.
#pragma once
#include <cstddef>

#include "../../src/alignment/frame_warp.hpp"

namespace stackalign::cuda {

template <typename T>
__global__ void warp_pixels(const T* __restrict__ in, T* __restrict__ out, int w, int h, FrameWarp t) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w) out[std::size_t(y) * w + x] = warped_pixel<T>(in, w, h, t, x, y);
}

}  // namespace stackalign::cuda
