// How noisy a frame is against its contrast (refine_sigma = "auto",
// pipelines/stages/refine_smoothing.hpp, says what it is for).
#pragma once
#include <vector>

#include "../core/image.hpp"

namespace stackalign {

// Immerkaer's noise estimate (the mask [1 -2 1] x [1 -2 1] cancels every
// plane, so smooth structure gives ~0), in its robust form: 1.4826 x the
// median absolute response / 6, over a centred crop of at most 256 x 256
// pixels of a 2D frame, skipping pixels whose 3 x 3 neighbourhood is flat
// (saturated, clipped or padded areas say nothing about noise); divided by
// the standard deviation of the crop's values. 0 for a frame without
// contrast.
double noise_to_contrast(const RawFrame& frame);

// The noise of a series: the least of its frames' ratios. Structure only
// ever adds to the estimate (a frame whose intensity bands were reordered
// reads 0.38 where its unchanged neighbour reads 0.03), so the least is the
// truest; a few frames spread over the series are enough.
double series_noise(const std::vector<double>& ratios);

}  // namespace stackalign
