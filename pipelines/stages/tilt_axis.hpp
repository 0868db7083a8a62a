// Tilt-geometry stage of a stack job: with `tilt_axis = "auto"` the axis,
// and with `tilt_offset = "auto"` a slab's tilt-angle offset, are estimated
// from the kept views (src/alignment/tilt_axis.hpp) before the search,
// which stretches about them.
#pragma once
#include "../../src/alignment/tilt_axis.hpp"
#include "../plan/stack_plan.hpp"

namespace stackalign {

// The plan with its tilt axis and offset decided: `plan` itself unless it
// asks for "auto"; then tilt_axis, tilt_axis_error and tilt_axis_views are
// the axis estimate's, and tilt_offset, tilt_offset_error the offset's
// (added to every angle).
StackPlan resolve_tilt_axis(const StackPlan& plan, FrameReader& frames, Verbosity verbosity);

}  // namespace stackalign
