// Tilt-axis stage of a stack job: with `tilt_axis = "auto"` the axis is
// estimated from the kept views (src/alignment/tilt_axis.hpp) before the
// search, which stretches about it.
#pragma once
#include "../../src/alignment/tilt_axis.hpp"
#include "../plan/stack_plan.hpp"

namespace stackalign {

// The plan with its tilt axis decided: `plan` itself unless it asks for
// "auto"; then tilt_axis, tilt_axis_error and tilt_axis_views are the estimate's.
StackPlan resolve_tilt_axis(const StackPlan& plan, FrameReader& frames, Verbosity verbosity);

}  // namespace stackalign
