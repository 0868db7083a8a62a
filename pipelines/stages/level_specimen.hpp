// Tilt offset, written: with `tilt_offset = "auto"` on a slab, the offset
// that lays the specimen level replaces the pairs' estimate in the angles
// every later stage uses and every output holds; within 2 of its stated
// errors of 0, the angles read. Two things can lay it level:
// - its tracked points (src/alignment/specimen_tilt.hpp), where they lie in
//   planes (a section, one or a few layers) and the slab fit did not find
//   content filling its depth;
// - else its reconstruction (src/alignment/specimen_plane.hpp), where the
//   content's gradients and its sharpest depth profile agree on a plane
//   (layers whose tracks slide between their depths) and the slab fit did
//   not find content filling a slab's depth either.
// The pairs' own estimate, the stretch they match best at, stays what they
// were searched with (plan.pairs_tilt_offset). Only the angles change: an
// offset added to every angle turns the reconstruction, not the views'
// consistency, so the offsets stay as they are.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/alignment/specimen_plane.hpp"
#include "../../src/io/stack_io.hpp"
#include "../../src/output/frame_tables.hpp"
#include "../plan/stack_plan.hpp"
#include "axis_by_tracks.hpp"
#include "search_pairs.hpp"
#include "slab_fit.hpp"

namespace stackalign {

// Whether the tracks laid it level.
bool level_by_tracks(StackPlan& plan, std::vector<FrameResult>& results, const TrackedAxis& tracked,
                     const SlabFit& slab, Verbosity verbosity);

// Why a reconstruction is not asked to lay the specimen level, or "".
// Where the slab fit found the slab's depth at its residual's knee, the
// content fills a slab that deep, and such content has no plane: the
// reconstruction's two measures answer by different features of it, and
// where they agreed by chance they laid the bench's slab at 84 degrees
// 1.39 degrees off at 100 photons (stated 0.46; `python3
// bench/tilt_accuracy.py --cases slab-oblique --noise 100 --no-reference
// --variants defaults`). Thin content the fit ran on in its thinnest
// support (one layer under noise) is still laid level by it.
std::string why_not_level_by_reconstruction(const SlabFit& slab);

// The views, at their offsets, reconstructed (filtered back-projection,
// binned to at most 256 px across the axis, as deep as half that, every
// second slice) at the angles they hold, and the plane measured in it;
// not run where why_not_level_by_reconstruction says why (`why_not_run`).
struct ReconstructedLevel {
    bool ran = false;
    std::string why_not_run;
    SpecimenPlane plane;
    double seconds = 0;
};
ReconstructedLevel level_by_reconstruction(StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                           std::vector<FrameResult>& results, const SlabFit& slab,
                                           Verbosity verbosity);
nlohmann::ordered_json reconstructed_level_record(const ReconstructedLevel& r);

// Where "auto" moved the angles (the pairs' estimate or the tracks') and a
// later stage says that offset is not the stage's tilt (`why`), the angles
// read are put back: the outputs' .tlt, each result's tilt and
// plan.angles; the pairs' estimate stays in plan.pairs_tilt_offset, `why`
// in plan.angles_as_read_why. Two stages say so: the slab fit, whose slab
// lies in the plane of the angles read (on content that fills a slab's
// depth the estimate is the stretch the pairs match best at, 7 to 9
// degrees from the stage's tilt on the bench's thick slabs), and the
// centres of mass, for a whole object, which an offset only turns about
// the axis: no projection tells it (docs/tomography.md#tilt-offset).
void take_angles_as_read(StackPlan& plan, std::vector<FrameResult>& results, const std::string& why,
                         Verbosity verbosity);

}  // namespace stackalign
