// A tilt series' views as its reconstructions take them (kernels/tomo):
// each moved by its current offset onto the tilt-axis grid (on the plan's
// device), levelled and tapered. Projection matching and the specimen's
// level (level_specimen.hpp) reconstruct from them.
#pragma once
#include <vector>

#include "../../kernels/tomo/tomo.hpp"
#include "../../src/alignment/projection_views.hpp"
#include "../../src/io/stack_io.hpp"
#include "../../src/output/frame_tables.hpp"
#include "../plan/stack_plan.hpp"

namespace stackalign {

// The binning that brings the views to at most `width` px across the axis.
int binning_to_width(const StackPlan& plan, int width);

// Per frame, whether it is one of `order` (the views that take part).
std::vector<bool> frames_in(int frames, const std::vector<int>& order);

// Every view in `order` sampled on `grid` at its offset in `results`,
// levelled and tapered, into `views` (view-major, grid.width x grid.rows
// each; the others left as they are).
void grid_views(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                const AxisGrid& grid, const std::vector<int>& order, std::vector<float>& views);

// The filtered back-projection, `thickness` deep at the plan's angles, of
// slices 0, step, 2 step, ... of `views` (grid_views'; `used` per frame):
// a volume's energy over depth is a sum over slices, which a specimen's
// layers run through many of.
struct SliceVolume {
    TomoGeometry geometry;
    std::vector<float> volume;
};
SliceVolume every_nth_slice_volume(const StackPlan& plan, const std::vector<float>& views, const AxisGrid& grid,
                                   const std::vector<bool>& used, int step, int thickness);

}  // namespace stackalign
