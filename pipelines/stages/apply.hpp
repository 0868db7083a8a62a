// Apply stage: every frame resampled into the reference's geometry and
// appended to the aligned stack, frame by frame (a series larger than memory
// streams through), under a temporary name until complete.
#pragma once
#include <vector>

#include "../../src/output/frame_tables.hpp"
#include "../plan/stack_plan.hpp"

namespace stackalign {

// Writes <dir>/aligned.tif or aligned.mrc; returns its name. Time spent
// resampling goes to times.apply, the rest to times.write.
std::string write_aligned_stack(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                                StageTimes& times);

}  // namespace stackalign
