// The GPU twin of the refinement's statistics (Parzen histograms, NCC's
// pixel moments), for the CUDA pair searcher: each frame's refinement
// features live on the device beside its bins.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "../cuda_common.cuh"
#include "global_refine.hpp"
#include "pair_moments.hpp"
#include "parzen.hpp"

namespace stackalign::cuda {

// A block's Parzen histogram in shared memory (bins^2 x 8 bytes): each
// bin's sum as a 32-bit word plus how often that word wrapped round (a
// block's sums reach 2^37), so each of a pixel's 16 weights costs one 32-bit
// shared atomic, where a 64-bit one is a compare-and-swap loop. The sums are
// exact integers either way.
struct SharedParzen {
    unsigned int *low, *wraps;
    __device__ void add(int bin, std::uint32_t weight) const {
        const unsigned int before = atomicAdd(&low[bin], weight);
        if (before + weight < before) atomicAdd(&wraps[bin], 1u);
    }
};

// What every Parzen kernel's block does first and last: its shared
// histogram zeroed and the moving level map's knots copied to shared memory
// (read at scattered places by every pixel: from the kernel parameters'
// constant bank a warp's different addresses would serialise); at the end
// the block's sums added into its global histogram (integer atomics: the
// sums do not depend on the order, so they equal the CPU twin's).
__device__ inline SharedParzen parzen_block_begin(unsigned int* shared, float* knots, const RefineParams& p) {
    const int bb = p.bins * p.bins;
    for (int k = threadIdx.x; k < 2 * bb; k += blockDim.x) shared[k] = 0;
    for (int k = threadIdx.x; k <= kLevelKnots; k += blockDim.x) knots[k] = p.mov_levels.knots[k];
    __syncthreads();
    return {shared, shared + bb};
}
__device__ inline void parzen_block_end(const SharedParzen& h, unsigned long long* out, int bins) {
    __syncthreads();
    for (int k = threadIdx.x; k < bins * bins; k += blockDim.x) {
        const unsigned long long sum = (static_cast<unsigned long long>(h.wraps[k]) << 32) | h.low[k];
        if (sum) atomicAdd(&out[k], sum);
    }
}

// A block's pixel moments added into `out` (kMomentCount words): each
// warp's sums by shuffles, then one 64-bit atomic per warp and moment.
// Integers, so any order gives the CPU twin's sums. Every thread of the
// block must call it.
__device__ inline void moments_block_end(const PairMoments& m, unsigned long long* out) {
    for (int k = 0; k < kMomentCount; ++k) {
        long long v = m.m[k];
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
        if ((threadIdx.x & 31) == 0 && v) atomicAdd(&out[k], static_cast<unsigned long long>(v));
    }
}

struct DeviceFeatures {
    DeviceBuffer<float> smooth, coefficients;
    RefineImage geometry{0, 0, 0};
    LevelMap levels;  // on the host: the refinement parameters carry it
};

// The GPU twin of refine_features, from the frame's normalised image (or its
// edges) already on the device; every value equals the CPU's
// (feature_filters.hpp).
class DeviceFeatureMaker {
public:
    // `source`: normalise()'s image for RefineOn::intensity, edges()' for
    // RefineOn::edges (the search's mean filter and Sobel), `geometry` big.
    // Prefilter::later as refine_features_from's: `coefficients` left the
    // smoothed copy for prefilter().
    void make(const float* source, const RefineImage& geometry, RefineOn on, float sigma, DeviceFeatures& out,
              cudaStream_t s, Prefilter when = Prefilter::now);
    void prefilter(DeviceFeatures& f, cudaStream_t s);
    // (min, max) of the features' smoothed values over `box`, clipped to them; (inf, -inf) when empty.
    std::pair<float, float> range(const DeviceFeatures& f, const RefineBox& box, cudaStream_t s);
    // The ranges of two features' boxes (a pair's reference and moving views) in one launch and one wait.
    std::pair<std::pair<float, float>, std::pair<float, float>> ranges(const DeviceFeatures& a, const RefineBox& box_a,
                                                                       const DeviceFeatures& b, const RefineBox& box_b,
                                                                       cudaStream_t s);

private:
    // The dynamic shared memory the staged prefilter may use (asked of the
    // device and allowed on the first make; -1 until then).
    int staged_allowance();
    int staged_bytes_ = -1;
    DeviceBuffer<double> lines_;  // the prefilter's recursion
    DeviceBuffer<unsigned long long> counts_;
    DeviceBuffer<float2> partial_, stats_;
};
void download(const DeviceFeatures& f, RefineFeatures& out, cudaStream_t s);

// Blocks per statistic of a batch (a shift's or a transform's) of `samples`
// each, `threads` per block: about 32 samples per thread, as each block
// ends with up to bins^2 global atomics; where the batch is too small to
// make `per_sm` blocks per SM that way (a stack pair's refinement: 9 shifts,
// or a rigid batch of 7 transforms of about 20k samples, left most of the
// H100's 132 SMs idle), more, down to 4 samples per thread. The sums are
// integers, so the split changes no bit of them. At most `cap`; `sms`:
// multiprocessor_count(), asked once by each user, not per batch.
int statistics_blocks(long long samples, int threads, std::size_t batch, int cap, int sms, int per_sm);

// Blocks per statistic cut down so the batch's blocks fill a whole number
// of waves of `slots` (blocks resident at once) where they are more than
// one: equal blocks run side by side, so 64 blocks x 9 shifts on 4 x 132
// slots took two waves, the second a tenth full. On the H200 a pair's
// refinement at 4096^2 took 11.3 ms against 14.6 (`build/bench loads
// build/bench-stages/acquisition_cuda.toml`), the same words.
int whole_waves(int blocks, std::size_t batch, int slots);

class DeviceRefiner {
public:
    explicit DeviceRefiner(ParzenAdd add = ParzenAdd::automatic) : add_(add) {}
    void upload(DeviceFeatures& slot, const RefineFeatures& f, cudaStream_t s);
    // Statistics of `shifts`, shift-major, identical to cpu::refine_statistics.
    std::vector<std::uint64_t> statistics(const DeviceFeatures& ref, const DeviceFeatures& mov, const RefineParams& p,
                                          const std::vector<ContinuousShift>& shifts, cudaStream_t s);
    // How its Parzen histograms are added, once known ("" before its first).
    std::string describe() const;

private:
    ParzenAdd add_;
    std::string tuning_;
    int sms_ = multiprocessor_count();  // made after the owner selected its GPU
    DeviceBuffer<ShiftTaps> taps_;
    DeviceBuffer<unsigned long long> hist_;
};

// The statistics of transforms (global_refine.hpp) of features already on
// the device (a searcher's slots), on the searcher's stream: nothing is
// copied but the transforms and the answers. `ref` and `mov` must outlive it.
std::unique_ptr<AffineStatistics> make_affine_statistics(const DeviceFeatures& ref, const DeviceFeatures& mov,
                                                         const RefineParams& p, const SampleGrid& grid,
                                                         cudaStream_t stream);

}  // namespace stackalign::cuda
