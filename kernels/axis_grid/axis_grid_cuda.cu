// The GPU twin of axis_grid_cpu.cpp: one thread a grid pixel, computed by
// the same grid_pixel as on the CPU.
#include "../cuda_common.cuh"
#include "axis_grid.hpp"

namespace stackalign::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void grid_kernel(const T* __restrict__ frame, GridFrameMap m, float* __restrict__ out) {
    const long long n = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (n >= (long long)(m.grid_width) * m.grid_rows) return;
    const int i = int(n % m.grid_width), j = int(n / m.grid_width);
    out[n] = grid_pixel(frame, m, i, j);
}

}  // namespace

void sample_on_axis_grid(const RawFrame& frame, const Transform& offset, const AxisGrid& grid, float* out, int gpu) {
    const long long n = (long long)(grid.width) * grid.rows;
    if (n <= 0) return;
    select_device(gpu);
    Stream s;
    DeviceBuffer<unsigned char> d_frame(std::max<std::size_t>(frame.bytes.size(), 1));
    DeviceBuffer<float> d_out(n);
    CUDA_CHECK(cudaMemcpyAsync(d_frame.get(), frame.bytes.data(), frame.bytes.size(), cudaMemcpyHostToDevice, s));
    GridFrameMap m = grid_frame_map(grid, offset);
    m.frame_width = frame.width, m.frame_height = frame.height;
    const int blocks = int((n + kThreads - 1) / kThreads);
    visit_pixels(frame, [&](const auto* host) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(host)>>;
        grid_kernel<<<blocks, kThreads, 0, s>>>(reinterpret_cast<const T*>(d_frame.get()), m, d_out.get());
    });
    CUDA_CHECK_LAUNCH("sample on the tilt-axis grid");
    CUDA_CHECK(cudaMemcpyAsync(out, d_out.get(), n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace stackalign::cuda
