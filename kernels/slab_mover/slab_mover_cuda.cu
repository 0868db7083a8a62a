// The GPU twin of slab_mover.cpp: one thread a moved pixel, computed by the
// same moved_pixel as on the CPU (no fused multiply-adds: -fmad=false).
#include <algorithm>
#include <vector>

#include "../cuda_common.cuh"
#include "slab_mover.hpp"

namespace stackalign::cuda {
namespace {

constexpr int kThreads = 256;

struct BoxGrid {
    int views, factor, x0, y0, width, rows;
};

// out as cpu::move_views has it; a thread per pixel, threads along a
// view's row.
__global__ void move_kernel(const double* __restrict__ means, BoxGrid b, MovedBlock block,
                            const double* __restrict__ across, int sets, const double* __restrict__ along,
                            double* __restrict__ out) {
    const long long n = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long column = (long long)(b.views) * block.width;
    if (n >= column * block.rows * sets) return;
    const int i = int(n % block.width), v = int((n / block.width) % b.views);
    const long long col = n / column;
    const int j = int(col % block.rows), s = int(col / block.rows);
    out[n] = moved_pixel(means, b.x0, b.y0, b.width, b.rows, b.factor, block, v, i, j,
                         across[std::size_t(s) * b.views + v], along[v]);
}

class KeptBoxedViews final : public GpuBoxedViews {
public:
    KeptBoxedViews(const BoxedViews& b, const MovedBlock& block, int gpu)
        : gpu_(gpu), grid_{b.views, b.factor, b.x0, b.y0, b.width, b.rows}, block_(block) {
        select_device(gpu);  // the means' memory on `gpu`
        means_.reserve(std::max<std::size_t>(b.means.size(), 1));
        CUDA_CHECK(cudaMemcpy(means_.get(), b.means.data(), b.means.size() * sizeof(double), cudaMemcpyHostToDevice));
    }

    void move(const double* across, int sets, const double* along, double* out, void* stream) const override {
        const long long n = (long long)(grid_.views) * block_.width * block_.rows * sets;
        if (n <= 0) return;
        select_device(gpu_);
        const auto s = static_cast<cudaStream_t>(stream);
        const std::size_t moves = std::size_t(sets) * grid_.views;
        DeviceBuffer<double> d_across(moves), d_along(std::size_t(grid_.views));
        CUDA_CHECK(cudaMemcpyAsync(d_across.get(), across, moves * sizeof(double), cudaMemcpyHostToDevice, s));
        CUDA_CHECK(cudaMemcpyAsync(d_along.get(), along, grid_.views * sizeof(double), cudaMemcpyHostToDevice, s));
        move_kernel<<<unsigned((n + kThreads - 1) / kThreads), kThreads, 0, s>>>(means_.get(), grid_, block_,
                                                                                d_across.get(), sets,
                                                                                d_along.get(), out);
        CUDA_CHECK_LAUNCH("move the slab fit's views");
        // The moves' copies are pageable: done by the time the calls return.
    }

    void move_to_host(const double* across, int sets, const double* along, double* out) const override {
        const std::size_t n = std::size_t(grid_.views) * block_.width * block_.rows * sets;
        if (n == 0) return;
        select_device(gpu_);
        const Stream s;
        DeviceBuffer<double> d_out(n);
        move(across, sets, along, d_out.get(), static_cast<cudaStream_t>(s));
        CUDA_CHECK(cudaMemcpyAsync(out, d_out.get(), n * sizeof(double), cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
    }

private:
    int gpu_;
    BoxGrid grid_;
    MovedBlock block_;
    DeviceBuffer<double> means_;
};

}  // namespace

std::shared_ptr<const GpuBoxedViews> keep_boxed_views(const BoxedViews& b, const MovedBlock& block, int gpu) {
    return std::make_shared<KeptBoxedViews>(b, block, gpu);
}

}  // namespace stackalign::cuda
