// The GPU twin of tomo_cpu.cpp: one thread per output value, each computed
// by the same __host__ __device__ function as on the CPU, so the results
// are bit-identical.
#include "../cuda_common.cuh"
#include "tomo.hpp"

namespace stackalign::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void filter_kernel(const float* __restrict__ views, const float* __restrict__ taps,
                              const float* __restrict__ weight, int nx, int ny, int nv, float* __restrict__ out) {
    const long long n = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (n >= (long long)(nx) * ny * nv) return;
    const int x = int(n % nx);
    const long long row = n / nx;  // v * ny + y
    const int v = int(row / ny);
    out[n] = ramp_filtered_at(views + row * nx, nx, taps, x, weight[v]);
}

__global__ void backproject_kernel(const float* __restrict__ filtered, const float* __restrict__ cos_t,
                                   const float* __restrict__ sin_t, int nx, int ny, int nv, int nz,
                                   float* __restrict__ volume) {
    const long long n = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (n >= (long long)(nx) * nz * ny) return;
    const int x = int(n % nx);
    const int z = int((n / nx) % nz);
    const int y = int(n / ((long long)(nx) * nz));
    volume[n] = backprojected_at(filtered, nx, ny, nv, nz, cos_t, sin_t, x, z, y);
}

__global__ void reproject_kernel(const float* __restrict__ volume, const float* __restrict__ filtered,
                                 const float* __restrict__ cos_t, const float* __restrict__ sin_t, int nx, int ny,
                                 int nv, int nz, float* __restrict__ out) {
    const long long n = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (n >= (long long)(nx) * ny * nv) return;
    const int u = int(n % nx);
    const int y = int((n / nx) % ny);
    const int v = int(n / ((long long)(nx) * ny));
    out[n] = reprojected_at(volume, filtered, nx, ny, nz, cos_t[v], sin_t[v], v, y, u);
}

int blocks_for(long long n) { return int((n + kThreads - 1) / kThreads); }

template <typename T>
void upload(DeviceBuffer<T>& d, const std::vector<T>& h, cudaStream_t s) {
    d.reserve(std::max<std::size_t>(h.size(), 1));
    CUDA_CHECK(cudaMemcpyAsync(d.get(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice, s));
}
template <typename T>
void download(std::vector<T>& h, const DeviceBuffer<T>& d, std::size_t n, cudaStream_t s) {
    h.resize(n);
    CUDA_CHECK(cudaMemcpyAsync(h.data(), d.get(), n * sizeof(T), cudaMemcpyDeviceToHost, s));
}

}  // namespace

Reprojection reproject_leave_one_out(const std::vector<float>& views, const TomoGeometry& g, int gpu, TomoOutputs keep) {
    const bool reproject = keep != TomoOutputs::volume;
    select_device(gpu);
    Stream s;
    const int nx = g.width, ny = g.rows, nv = g.views, nz = g.thickness;
    const long long series = (long long)(nx) * ny * nv, voxels = (long long)(nx) * nz * ny;
    DeviceBuffer<float> d_views, d_taps, d_weight, d_cos, d_sin, d_filtered(std::max<long long>(series, 1)),
        d_volume(std::max<long long>(voxels, 1)), d_projections(reproject ? std::max<long long>(series, 1) : 1);
    upload(d_views, views, s);
    upload(d_taps, ramp_taps(nx), s);
    upload(d_weight, g.weight, s);
    upload(d_cos, g.cos_t, s);
    upload(d_sin, g.sin_t, s);
    Reprojection r;
    if (series > 0) {
        filter_kernel<<<blocks_for(series), kThreads, 0, s>>>(d_views.get(), d_taps.get(), d_weight.get(), nx, ny, nv,
                                                              d_filtered.get());
        CUDA_CHECK_LAUNCH("filter_kernel");
    }
    if (voxels > 0) {
        backproject_kernel<<<blocks_for(voxels), kThreads, 0, s>>>(d_filtered.get(), d_cos.get(), d_sin.get(), nx, ny,
                                                                   nv, nz, d_volume.get());
        CUDA_CHECK_LAUNCH("backproject_kernel");
    }
    if (reproject && series > 0) {
        reproject_kernel<<<blocks_for(series), kThreads, 0, s>>>(d_volume.get(), d_filtered.get(), d_cos.get(),
                                                                 d_sin.get(), nx, ny, nv, nz, d_projections.get());
        CUDA_CHECK_LAUNCH("reproject_kernel");
    }
    if (keep == TomoOutputs::all) download(r.filtered, d_filtered, std::size_t(series), s);
    if (keep != TomoOutputs::projections) download(r.volume, d_volume, std::size_t(voxels), s);
    if (reproject) download(r.projections, d_projections, std::size_t(series), s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    return r;
}

}  // namespace stackalign::cuda
