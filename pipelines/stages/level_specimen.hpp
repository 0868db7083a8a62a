// Tilt offset, written: with `tilt_offset = "auto"` on a slab whose
// tracked points lie in planes (a section, one or a few layers) and
// whose content the slab fit did not find filling its depth, the
// offset that lays them level (src/alignment/specimen_tilt.hpp) replaces
// the pairs' estimate in the angles every later stage uses and every output
// holds; within 2 of its stated errors of 0, the angles read. The pairs'
// own estimate, the stretch they match best at, stays what they were
// searched with (plan.pairs_tilt_offset). Only the angles change: an
// offset added to every angle turns the reconstruction, not the views'
// consistency, so the offsets stay as they are.
#pragma once
#include <vector>

#include "../../src/output/frame_tables.hpp"
#include "../plan/stack_plan.hpp"
#include "axis_by_tracks.hpp"
#include "slab_fit.hpp"

namespace stackalign {

void level_by_tracks(StackPlan& plan, std::vector<FrameResult>& results, const TrackedAxis& tracked,
                     const SlabFit& slab, Verbosity verbosity);

}  // namespace stackalign
