// A view sampled on the tilt-axis grid (src/alignment/projection_views.hpp:
// moved by its offset, turned so the axis is the grid's y, each grid pixel
// the mean of bin x bin bilinear samples, NaN where one falls outside the
// frame). Both twins compute each pixel with grid_pixel
// (src/alignment/grid_sampling.hpp), so they give the same floats. On the
// GPU one thread makes a grid pixel: at acquisition size (4096^2 frames,
// bin 8) that is 64 samples a pixel, most of the patch tracks' host time.
#pragma once
#include "../../src/alignment/projection_views.hpp"
#include "../../src/core/image.hpp"
#include "../backend.hpp"

namespace stackalign {

// grid.width x grid.rows floats into `out`.
void sample_on_axis_grid(const RawFrame& frame, const Transform& offset, const AxisGrid& grid, float* out,
                         const Device& device);

namespace cpu {
void sample_on_axis_grid(const RawFrame& frame, const Transform& offset, const AxisGrid& grid, float* out);
}
namespace cuda {
void sample_on_axis_grid(const RawFrame& frame, const Transform& offset, const AxisGrid& grid, float* out, int gpu);
}

}  // namespace stackalign
