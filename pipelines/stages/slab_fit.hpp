// Slab stage after the tracks: a thick slab's offsets corrected by the
// smooth shapes of error that make its views most consistent with one slab
// (src/alignment/smooth_errors.hpp). With `slab_fit = "auto"` it runs on a
// slab whose content fills its depth, which the tracks tell: there they
// leave their across-axis corrections out (axis_by_tracks.hpp), and the
// pairs' error is smooth over the tilt. On content at a few depths the
// tracks correct the pairs, and a fit of smooth shapes in a deep support
// would trade their error for the layers' depths
// (docs/tomography.md#accuracy-and-its-limits).
#pragma once
#include <future>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/io/stack_io.hpp"
#include "../../src/output/frame_tables.hpp"
#include "../plan/stack_plan.hpp"
#include "axis_by_tracks.hpp"
#include "search_pairs.hpp"

namespace stackalign {

struct SlabFit {
    bool ran = false;
    std::string why;  // why not, when it did not run
    // Run on content the tracks found at a few depths, over a range whose
    // ends they place on few positions: the views beyond kFreeBeyond each
    // free, and the tilt offset the tracks' or the reconstruction's.
    bool on_layers = false;
    int binning = 0, width = 0, rows = 0;  // the fit's views: frame px per pixel, pixels across, rows along
    // The slab's depth the views' consistency chose (frame px), from the
    // depths tried at twice the binning and their residuals.
    double thickness_px = 0;
    std::string depth_chosen_by;  // "knee", or "thinnest": the residual fell too little to show a depth
    std::vector<double> depths_tried_px, depth_residuals;
    double content_depth_px = 0;  // where the content lay against the tilt axis's depth, frame px
    double residual_before = 0, residual_after = 0;  // the fit's sums of squares
    double across_rms_px = 0, along_rms_px = 0;      // the corrections taken off, frame px RMS
    double seconds = 0;
    // Where the seconds went: the views read and held, the depth scan
    // (a support per depth tried), the fit at the chosen depth.
    double held_seconds = 0, depth_scan_seconds = 0, fit_seconds = 0;
};

// The offsets of the views `search` used corrected in place where the stage
// runs (plan.slab_fit, and for "auto" the tracks' word; never where
// `placed_whole`: the centres of mass placed a whole object, and the
// stage's moves would stand on theirs), excluded views placed again.
SlabFit fit_slab(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                 std::vector<FrameResult>& results, const TrackedAxis& tracked, bool placed_whole,
                 Verbosity verbosity);

// Where the stage may run on a GPU, what its factors need there made ready
// on a thread of its own while the pairs are searched (the future's end
// waits for it); nothing elsewhere.
std::future<void> prepare_slab_fit(const StackPlan& plan);

nlohmann::ordered_json slab_fit_record(const SlabFit& s);

}  // namespace stackalign
