// The GPU twin of the transform refinements' statistics (Parzen histograms,
// NCC's pixel moments): both volumes uploaded once, then one launch per
// batch of transforms.
#include <algorithm>

#include "global_refine.hpp"
#include "refine_cuda.cuh"

namespace stackalign::cuda {
namespace {

constexpr int kThreads = 256;

// Block (slice of samples, transform): the block's samples into its shared
// histogram, then into the transform's global one (parzen_block_begin / _end).
__global__ void __launch_bounds__(kThreads)
affine_parzen_kernel(const float* __restrict__ ref, RefineImage ref_geometry, const float* __restrict__ coefficients,
                     RefineImage mov_geometry, RefineParams p, SampleGrid grid, const Affine3* __restrict__ transforms,
                     unsigned long long* __restrict__ hist) {
    extern __shared__ unsigned int shared_hist[];  // bins^2 words and their wrap counts
    __shared__ float knots[kLevelKnots + 1];
    const SharedParzen h = parzen_block_begin(shared_hist, knots, p);
    const Affine3 t = transforms[blockIdx.y];
    const long long samples = grid.count();
    for (long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x; i < samples;
         i += (long long)(gridDim.x) * blockDim.x) {
        int x, y, z;
        grid.sample(i, x, y, z);
        float b;
        if (!affine_sample(coefficients, mov_geometry, t, x, y, z, grid.margin, b)) continue;
        const float a = ref[((long long)(z) * ref_geometry.height + y) * ref_geometry.width + x];
        parzen_add(a, b, p, knots, [&](int bin, std::uint32_t w) { h.add(bin, w); });
    }
    parzen_block_end(h, hist + (long long)(blockIdx.y) * p.bins * p.bins, p.bins);
}

// Block (slice of samples, transform): the samples' NCC moments.
__global__ void __launch_bounds__(kThreads)
affine_moments_kernel(const float* __restrict__ ref_coefficients, RefineImage ref_geometry,
                      const float* __restrict__ coefficients, RefineImage mov_geometry, SampleGrid grid,
                      const Affine3* __restrict__ transforms, unsigned long long* __restrict__ out) {
    const Affine3 t = transforms[blockIdx.y];
    const long long samples = grid.count();
    PairMoments m;
    for (long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x; i < samples;
         i += (long long)(gridDim.x) * blockDim.x) {
        int x, y, z;
        grid.sample(i, x, y, z);
        float b;
        if (affine_sample(coefficients, mov_geometry, t, x, y, z, grid.margin, b))
            m.add(reference_value(ref_coefficients, ref_geometry, x, y, z), b);
    }
    moments_block_end(m, out + (long long)(blockIdx.y) * kMomentCount);
}

class CudaAffineStatistics : public AffineStatistics {
public:
    // From host features: uploaded to copies of its own, on a stream of its own.
    CudaAffineStatistics(const RefineFeatures& ref, const RefineFeatures& mov, const RefineParams& p,
                         const SampleGrid& grid, int gpu)
        : p_(p), grid_(grid), own_((select_device(gpu), std::make_unique<Owned>())), stream_(own_->stream),
          ref_(own_->ref), mov_(own_->mov) {
        DeviceRefiner refiner;
        refiner.upload(own_->ref, ref, stream_);
        refiner.upload(own_->mov, mov, stream_);
    }
    // From features on the device already, on the caller's stream.
    CudaAffineStatistics(const DeviceFeatures& ref, const DeviceFeatures& mov, const RefineParams& p,
                         const SampleGrid& grid, cudaStream_t stream)
        : p_(p), grid_(grid), stream_(stream), ref_(ref), mov_(mov) {}
    std::vector<std::uint64_t> operator()(const std::vector<Affine3>& transforms) override {
        const std::size_t size = statistics_size(p_), n = transforms.size();
        transforms_.reserve(n);
        hist_.reserve(n * size);
        CUDA_CHECK(cudaMemcpyAsync(transforms_.get(), transforms.data(), n * sizeof(Affine3), cudaMemcpyHostToDevice, stream_));
        CUDA_CHECK(cudaMemsetAsync(hist_.get(), 0, n * size * sizeof(unsigned long long), stream_));
        const dim3 launch(blocks_per_transform(n), unsigned(n));
        if (p_.metric == Metric::ncc) {
            affine_moments_kernel<<<launch, kThreads, 0, stream_>>>(ref_.coefficients.get(), ref_.geometry,
                                                                    mov_.coefficients.get(), mov_.geometry, grid_,
                                                                    transforms_.get(), hist_.get());
            CUDA_CHECK_LAUNCH("affine_moments_kernel");
        } else {
            affine_parzen_kernel<<<launch, kThreads, size * sizeof(unsigned long long), stream_>>>(
                ref_.smooth.get(), ref_.geometry, mov_.coefficients.get(), mov_.geometry, p_, grid_, transforms_.get(),
                hist_.get());
            CUDA_CHECK_LAUNCH("affine_parzen_kernel");
        }
        std::vector<std::uint64_t> out(n * size);
        CUDA_CHECK(cudaMemcpyAsync(out.data(), hist_.get(), out.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, stream_));
        CUDA_CHECK(cudaStreamSynchronize(stream_));
        return out;
    }

private:
    int blocks_per_transform(std::size_t transforms) const {
        return statistics_blocks(grid_.count(), kThreads, transforms, 128, sms_, 2);
    }
    struct Owned {
        Stream stream;
        DeviceFeatures ref, mov;
    };
    RefineParams p_;
    SampleGrid grid_;
    std::unique_ptr<Owned> own_;
    cudaStream_t stream_;
    const DeviceFeatures &ref_, &mov_;
    int sms_ = multiprocessor_count();
    DeviceBuffer<Affine3> transforms_;
    DeviceBuffer<unsigned long long> hist_;
};

}  // namespace

std::unique_ptr<AffineStatistics> make_affine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                                         const RefineParams& p, const SampleGrid& grid, int gpu) {
    return std::make_unique<CudaAffineStatistics>(ref, mov, p, grid, gpu);
}

std::unique_ptr<AffineStatistics> make_affine_statistics(const DeviceFeatures& ref, const DeviceFeatures& mov,
                                                         const RefineParams& p, const SampleGrid& grid,
                                                         cudaStream_t stream) {
    return std::make_unique<CudaAffineStatistics>(ref, mov, p, grid, stream);
}

}  // namespace stackalign::cuda
