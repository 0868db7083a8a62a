// A stack job's tilt angles and the order its views are aligned in: from
// an IMOD .tlt, a SerialEM .mdoc (given, or beside the stack) or a range;
// a series stored out of tilt order gets its view_order (stack_plan.hpp).
#pragma once
#include "../../src/config/config.hpp"
#include "stack_plan.hpp"

namespace stackalign {

// Sets plan.angles, angles_from, view_order, mdoc_tilt_axis (and the input's
// pixel size from an .mdoc where the input has none); plan.frames, files
// and input must be known. InputError / ConfigError naming the file or key.
void plan_angles(const Config& cfg, StackPlan& plan);

}  // namespace stackalign
