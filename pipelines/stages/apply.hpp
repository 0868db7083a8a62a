// Apply stage: every frame resampled into the reference's geometry and
// appended to the aligned stack, frame by frame (a series larger than memory
// streams through), under a temporary name until complete.
#pragma once
#include <functional>
#include <vector>

#include "../../src/output/frame_tables.hpp"
#include "../plan/stack_plan.hpp"

namespace stackalign {

// Where a caller takes each aligned frame as it is made (the Python
// module's array): called from several threads at once, for each frame once.
using AlignedFrameSink = std::function<void(int frame, const RawFrame& aligned)>;

// Writes <dir>/aligned.tif or aligned.mrc; returns its name. Each frame
// also goes to `also` where it is set. Time spent resampling goes to
// times.apply, the rest to times.write.
std::string write_aligned_stack(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                                StageTimes& times, const AlignedFrameSink& also = {});
// The same frames to `to` only, no file (times.apply).
void move_aligned_frames(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                         StageTimes& times, const AlignedFrameSink& to);

}  // namespace stackalign
