// The GPU twin of the Parzen histograms, for the CUDA pair searcher: each
// frame's refinement features live on the device beside its bins.
#pragma once
#include <cuda_runtime.h>

#include <vector>

#include "../cuda_common.cuh"
#include "parzen.hpp"

namespace stackalign::cuda {

struct DeviceFeatures {
    DeviceBuffer<float> smooth, coefficients;
    RefineImage geometry{0, 0, 0};
};

class DeviceRefiner {
public:
    void upload(DeviceFeatures& slot, const RefineFeatures& f, cudaStream_t s);
    // Histograms of `shifts`, shift-major, identical to cpu::parzen_histograms.
    std::vector<std::uint64_t> histograms(const DeviceFeatures& ref, const DeviceFeatures& mov, const RefineParams& p,
                                          const std::vector<ContinuousShift>& shifts, cudaStream_t s);

private:
    DeviceBuffer<ShiftTaps> taps_;
    DeviceBuffer<unsigned long long> hist_;
};

}  // namespace stackalign::cuda
