// The CPU twin of axis_grid.hpp: the host's own sampler.
#include "axis_grid.hpp"

namespace stackalign::cpu {

void sample_on_axis_grid(const RawFrame& frame, const Transform& offset, const AxisGrid& grid, float* out) {
    axis_samples(frame, offset, grid, out);
}

}  // namespace stackalign::cpu
