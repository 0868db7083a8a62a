// A series stored out of tilt order is aligned in tilt order (StackPlan::
// view_order); what is written per frame goes back to the file's order, so
// that frame k of the aligned stack, row k of shifts.csv and line k of the
// IMOD files are the input's frame k, with its own tilt.
#pragma once
#include <vector>

#include "../../src/io/stack_io.hpp"
#include "../../src/output/frame_tables.hpp"
#include "../plan/stack_plan.hpp"

namespace stackalign {

struct InFileOrder {
    StackPlan plan;                    // angles, exclusions and reference by the file's frames
    std::vector<FrameResult> results;  // results[k]: the file's frame k
    FrameReader frames;                // read(k): the file's frame k
};
// The same, unchanged, where the plan has no view_order.
InFileOrder in_file_order(const StackPlan& plan, const std::vector<FrameResult>& results, const FrameReader& frames);

}  // namespace stackalign
