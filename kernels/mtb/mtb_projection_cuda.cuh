// GPU twin of mtb_projection_cpu.cpp: the same integer projections.
#pragma once
#include <cuda_runtime.h>

#include "../cuda_common.cuh"
#include "../preprocess/preprocess_cuda.cuh"
#include "mtb_projection.hpp"

namespace stackalign::cuda {

class DeviceMtb {
public:
    explicit DeviceMtb(const MtbParams& p) : params_(p), pre_(PreprocessParams{}) {}
    // Uploads `frame`, builds its bitmap projections on the device, and
    // brings back the projections (a few KB) and the threshold levels.
    MtbProjections run(const RawFrame& frame, cudaStream_t stream);
    // The brightness histogram of the last frame (tests).
    std::vector<std::uint32_t> last_histogram(cudaStream_t stream) const;

private:
    MtbParams params_;
    DevicePreprocessor pre_;
    DeviceBuffer<std::uint32_t> histogram_;  // kBrightnessLevels counts, then median, lo, hi
    DeviceBuffer<std::int32_t> counts_;       // col white, col black, row white, row black
};

}  // namespace stackalign::cuda
