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

// Where the .mdoc's header gave a tilt axis: how far `axis_deg` (found by
// `whose`, e.g. "views'") lies from it, logged; a warning beyond 2 degrees.
void log_mdoc_axis_gap(const StackPlan& plan, double axis_deg, const char* whose, Verbosity verbosity);

}  // namespace stackalign
