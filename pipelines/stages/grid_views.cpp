#include "grid_views.hpp"

#include <algorithm>

#include "../../kernels/axis_grid/axis_grid.hpp"
#include "view_chunks.hpp"

namespace stackalign {
namespace {

// Rows 0, step, 2 step, ... of each of `count` views of width x rows.
std::vector<float> every_nth_row(const std::vector<float>& views, int width, int rows, int count, int step) {
    const int kept = (rows + step - 1) / step;
    std::vector<float> out(std::size_t(width) * kept * count);
    for (int v = 0; v < count; ++v)
        for (int k = 0; k < kept; ++k)
            std::copy_n(&views[(std::size_t(v) * rows + std::size_t(k) * step) * width], width,
                        &out[(std::size_t(v) * kept + k) * width]);
    return out;
}

}  // namespace

int binning_to_width(const StackPlan& plan, int width) {
    const AxisGrid across = axis_grid(plan.width, plan.height, plan.tilt_axis, 1);
    return std::max(1, (across.width + width - 1) / width);
}

std::vector<bool> frames_in(int frames, const std::vector<int>& order) {
    std::vector<bool> used(frames, false);
    for (int v : order) used[v] = true;
    return used;
}

void grid_views(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                const AxisGrid& grid, const std::vector<int>& order, std::vector<float>& views) {
    const std::size_t size = std::size_t(grid.width) * grid.rows;
    for_each_view_read(frames, order, [&](std::size_t k, const RawFrame& frame) {
        float* view = views.data() + std::size_t(order[k]) * size;
        sample_on_axis_grid(frame, results[order[k]].offset, grid, view, plan.device);
        level_axis_view(grid, view);
    });
}

SliceVolume every_nth_slice_volume(const StackPlan& plan, const std::vector<float>& views, const AxisGrid& grid,
                                   const std::vector<bool>& used, int step, int thickness) {
    SliceVolume out;
    out.geometry = tomo_geometry(grid.width, (grid.rows + step - 1) / step, thickness, plan.angles, used);
    out.volume = reproject_leave_one_out(every_nth_row(views, grid.width, grid.rows, plan.frames, step), out.geometry,
                                         plan.device, TomoOutputs::volume)
                     .volume;
    return out;
}

}  // namespace stackalign
