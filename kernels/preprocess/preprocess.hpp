// Frame (or volume) preprocessing: normalise -> box mean -> Sobel magnitude ->
// threshold -> quantize to histogram bins. The CPU and CUDA twins evaluate the same
// float expressions in the same order (no FMA contraction on either side), so
// they produce identical bins; tests hold them to that.
//
// Units: each frame is first mapped linearly so its minimum is 0 and its
// maximum 255 ("8-bit-equivalent units"). The mean filter keeps those units;
// the Sobel magnitude uses the unscaled 3x3 kernels ([1 2 1] x [-1 0 1]), so a
// clean step edge of height h gives magnitude 4h. `threshold` is compared
// against whatever the last enabled stage produced, in those units, which
// makes it mean the same thing for 8-bit, 16-bit and float data.
#pragma once
#include "../../src/core/image.hpp"
#include "../backend.hpp"

namespace stackalign {

struct PreprocessParams {
    int mean_radius = 1;
    bool sobel = true;
    float threshold = 20.0f;
    int bins = 64;
};

// The one entry point: preprocess on the device's backend.
BinImage preprocess(const RawFrame& frame, const PreprocessParams& params, const Device& device);

// Every `stride`-th pixel of every `stride`-th row, from pixel (x, y) of a
// 2D frame: a search over a window of millions of pixels scored on a
// regular sample of them (the chance stage's null, pair_confidence.hpp).
struct PixelSample {
    int stride = 1;
    int x = 0, y = 0;  // 0 <= x, y < stride
    int width(int full) const { return (full - x + stride - 1) / stride; }
    int height(int full) const { return (full - y + stride - 1) / stride; }
};
// The bins of `full` at the sample: pixel (i, j) is full's (x + stride i, y + stride j).
BinImage sampled_bins(const BinImage& full, const PixelSample& sample);

namespace cpu {

// Stages, exposed for tests. Borders replicate the edge pixel. Volumes
// (depth > 1) get the 3D versions: a (2r+1)^3 box, the 3x3x3 Sobel.
ImageF normalise(const RawFrame& frame);                 // min..max -> 0..255
ImageF mean_filter(const ImageF& image, int radius);     // separable box, rows then columns (then slices)
ImageF mean_filter_3d(const ImageF& volume, int radius);
ImageF sobel_magnitude(const ImageF& image);
// Values <= 0 or below threshold -> bin 0; [threshold, max] -> bins 1..bins-1.
BinImage quantize(const ImageF& values, float threshold, int bins);

BinImage preprocess(const RawFrame& frame, const PreprocessParams& params);
// The same, keeping the images it made on the way: the normalised frame and
// the values it quantized (its mean filter, and Sobel where params.sobel),
// which the refinement's features start from.
struct Preprocessed {
    ImageF normalised, values;
    BinImage bins;
};
Preprocessed preprocess_keeping(const RawFrame& frame, const PreprocessParams& params);

}  // namespace cpu
struct FrameWarp;  // src/alignment/frame_warp.hpp
namespace cuda {
BinImage preprocess(const RawFrame& frame, const PreprocessParams& params, int gpu = 0);
// The frame resampled through `warp` on the GPU, brought back: the twin test
// holds it to transform_frame's pixels.
RawFrame warp_frame(const RawFrame& frame, const FrameWarp& warp, int gpu = 0);
}  // namespace cuda

}  // namespace stackalign
