// The views a slab fit moves (slab_fit.hpp): each sampled once on the
// tilt-axis grid at its offset, held finer than the fit's pixels and
// smoothed, then moved by the fit's corrections as one bilinear sample of
// its box means.
#pragma once
#include <vector>

#include "../../src/alignment/projection_views.hpp"
#include "../../src/alignment/smooth_errors.hpp"
#include "../../src/core/image.hpp"
#include "../../kernels/backend.hpp"

namespace stackalign {

struct HeldViews {
    int width = 0, rows = 0;  // the grid's
    GridRect valid;           // inside its frame in every view
    std::vector<std::vector<float>> pixels;
};

// `frame` at `offset` sampled on `grid` (kernels/axis_grid: the CPU or a
// GPU), its part inside `valid` smoothed by a Gaussian of `sigma` grid
// pixels, its own edges repeated (what lies outside is never read). The
// smoothing is why the fit's moves do not read as inconsistency: a
// bilinear sample blurs by how far it falls between pixels, so views moved
// by different fractions would differ in their finest detail
// (docs/tomography.md#slab-fit).
std::vector<float> held_view(const RawFrame& frame, const Transform& offset, const AxisGrid& grid,
                             const GridRect& valid, double sigma, const Device& device);

// The held views moved by per-view corrections, as SlabConsistency takes
// them: a block `width` x `rows` pixels of `factor` held pixels each,
// centred on the grid's centre (the tilt axis); with slopes by central
// differences of half a fit pixel. With CUDA the views' box means are kept
// on the GPU as well (kernels/slab_mover), for the residuals that need no
// slopes.
ViewMoves mover(const HeldViews& h, int factor, int width, int rows, const Device& device);

}  // namespace stackalign
