// A tilt series' views as projection matching reconstructs them: each
// moved by its current offset, turned so the tilt axis is the image y axis,
// binned, levelled and tapered; and a shift measured in that geometry taken
// back to the frame's.
#pragma once
#include <vector>

#include "../core/image.hpp"
#include "grid_sampling.hpp"
#include "transform.hpp"

namespace stackalign {

struct AxisGrid {
    int frame_width = 0, frame_height = 0;  // the views as read
    double axis_deg = 0;                    // tilt axis, counter-clockwise from the image y axis
    int bin = 1;
    int width = 0, rows = 0;                // binned: across the axis, along it
};
// The grid for frames of this size: across the axis is the frame's width
// when the axis is nearer y than x, else its height.
AxisGrid axis_grid(int frame_width, int frame_height, double axis_deg, int bin);

// What places a view placed by `offset` on the grid (grid_sampling.hpp).
GridFrameMap grid_frame_map(const AxisGrid& grid, const Transform& offset);

// The view aligned by `offset` sampled on the grid as it is (each binned
// pixel the mean of bin x bin bilinear samples about the frame centre), NaN
// where a sample falls outside the frame: grid.width x grid.rows floats.
void axis_samples(const RawFrame& frame, const Transform& offset, const AxisGrid& grid, float* out);

// The view aligned by `offset` (as the aligned stack would show it:
// content at X of the reference at offset(X) in the frame) sampled on the
// grid: each binned pixel the mean of bin x bin bilinear samples about the
// frame centre; then the mean of the pixels inside the frame subtracted,
// pixels partly outside it set to 0 (that mean), and the ends of every row
// tapered to 0 over a sixteenth of its length (the ramp filter turns a cut
// edge into streaks across the reconstruction).
ImageF axis_view(const RawFrame& frame, const Transform& offset, const AxisGrid& grid);
// axis_view's second half: `out` (grid.width x grid.rows floats), as
// axis_samples or kernels/axis_grid left it, levelled and tapered in place.
void level_axis_view(const AxisGrid& grid, float* out);

// A rectangle of grid pixels: columns [x, x + width), rows [y, y + height).
struct GridRect {
    int x = 0, y = 0, width = 0, height = 0;
};
// The largest rectangle centred on the grid whose pixels lie inside the
// frame in every view placed by `offsets` (empty where none does). Where
// the grid is turned against the frame, or the views have moved, the
// frame's edges cross the grid: each view's cut edge sits where its own
// offset puts it, and matched against a reprojection it pulls the view
// back towards the frame's coordinates.
GridRect covered_rect(const AxisGrid& grid, const std::vector<Transform>& offsets);
// `view` (grid.width x grid.rows) multiplied by 1 inside `r` and 0 outside,
// a raised cosine over the `ramp` pixels inside each edge: every view then
// ends where all do, at no view's own frame edge.
void taper_to_rect(float* view, const AxisGrid& grid, const GridRect& r, int ramp);

// A shift (dx, dy) measured between two grid images, in the frame's pixels.
Shift frame_shift(const AxisGrid& grid, double dx, double dy);

}  // namespace stackalign
