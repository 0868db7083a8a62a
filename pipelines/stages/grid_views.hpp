// A tilt series' views as its reconstructions take them (kernels/tomo):
// each moved by its current offset onto the tilt-axis grid (on the plan's
// device), levelled and tapered. Projection matching and the specimen's
// level (level_specimen.hpp) reconstruct from them.
#pragma once
#include <vector>

#include "../../src/alignment/projection_views.hpp"
#include "../../src/io/stack_io.hpp"
#include "../../src/output/frame_tables.hpp"
#include "../plan/stack_plan.hpp"

namespace stackalign {

// Every view in `order` sampled on `grid` at its offset in `results`,
// levelled and tapered, into `views` (view-major, grid.width x grid.rows
// each; the others left as they are).
void grid_views(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                const AxisGrid& grid, const std::vector<int>& order, std::vector<float>& views);

// Rows 0, step, 2 step, ... of each of `count` views of width x rows.
std::vector<float> every_nth_row(const std::vector<float>& views, int width, int rows, int count, int step);

}  // namespace stackalign
