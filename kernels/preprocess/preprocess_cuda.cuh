// GPU twin of preprocess_cpu.cpp: the same float expressions in the same
// order (built with -fmad=false), so the bins are identical.
#pragma once
#include <cuda_runtime.h>

#include "../cuda_common.cuh"
#include "../../src/alignment/frame_warp.hpp"
#include "preprocess.hpp"

namespace stackalign::cuda {

class DevicePreprocessor {
public:
    explicit DevicePreprocessor(const PreprocessParams& p) : params_(p) {}
    // Uploads `frame` and writes its bins (width*height bytes) to d_bins.
    void run(const RawFrame& frame, std::uint8_t* d_bins, cudaStream_t stream);
    // run() in its steps, for callers that keep an intermediate image (the
    // refinement's features). Each result lives in this preprocessor until
    // its next call. Uploads `frame` and maps it to 0..255:
    const float* normalise(const RawFrame& frame, cudaStream_t stream);
    // The same for the frame resampled through `warp` on the device first
    // (a stretched or turned view; src/alignment/frame_warp.hpp, 2D frames).
    const float* normalise(const RawFrame& frame, const FrameWarp& warp, cudaStream_t stream);
    // Either (warp may be null), where `uploaded` says that `frame` is the
    // one the last call was given, unchanged: its upload serves again (a
    // view turned by several candidate angles is uploaded once).
    const float* normalise(const RawFrame& frame, const FrameWarp* warp, bool uploaded, cudaStream_t stream);
    // The last warped frame's pixels (its own type), for tests.
    const unsigned char* warped() const { return warped_.get(); }
    // The box mean and Sobel magnitude of the params of the frame normalise() holds:
    const float* edges(int width, int height, int depth, cudaStream_t stream);
    // Bins of `edges` (width*height*depth values) to d_bins:
    void quantize(const float* edges, std::size_t n, std::uint8_t* d_bins, cudaStream_t stream);
    // The bins of a 2D frame's `edges` at `sample` only (sampled_bins of
    // quantize's), sample.width(width) x sample.height(height) to d_bins:
    void quantize(const float* edges, int width, int height, const PixelSample& sample, std::uint8_t* d_bins,
                  cudaStream_t stream);

private:
    // The largest of n edge values, on the device (quantize's top bin).
    const float* top(const float* edges, std::size_t n, cudaStream_t stream);
    PreprocessParams params_;
    DeviceBuffer<unsigned char> raw_, warped_;
    std::size_t raw_bytes_ = 0;  // what raw_ holds of the last frame uploaded
    DeviceBuffer<float> a_, b_;
    DeviceBuffer<float> stats_;          // [min, max, top]
    DeviceBuffer<unsigned char> scratch_;  // CUB temporary storage
};

}  // namespace stackalign::cuda
