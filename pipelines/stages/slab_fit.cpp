#include "slab_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../../kernels/least_squares/least_squares.hpp"
#include "../../src/alignment/depth_scan.hpp"
#include "../../src/alignment/projection_views.hpp"
#include "../../src/alignment/smooth_errors.hpp"
#include "../plan/tilt_decisions.hpp"
#include "accumulate.hpp"
#include "slab_views.hpp"
#include "view_chunks.hpp"

namespace stackalign {
namespace {

// The fit's views are binned to at most this many pixels across the axis,
// so that a slice has fewer unknowns (depth x the support's width) than
// data (views x width): 8,600 unknowns for a fifth-deep slab at +-60
// degrees, one Cholesky factor (`python3 bench/consistency_fit.py --size
// 512 --binning 4`).
constexpr int kFitWidth = 128;
// The views are held at most this many times finer than the fit's pixels
// and moved there: a move is then a bilinear sample of the held views,
// not of the frames.
constexpr int kHeldFiner = 4;
// The middle share of the rows along the axis that enters the fit (the
// object's ends along the axis are not a slab's).
constexpr double kRows = 0.7;
// Free shapes: six across the axis. Four along it as well took the wide
// slab's along-axis error from 0.093 px to 0.036 but left the zebrafish
// slab, the slab at +2 degrees, five layers and the oblique slab worse
// along the axis (0.064 -> 0.089, 0.081 -> 0.111, 0.058 -> 0.075, 0.061 ->
// 0.135: `python3 bench/tilt_accuracy.py --size 512 --noise 1000
// --no-reference --cases slab slab-wide slab-offset slab-layers
// slab-oblique --variants 'fit=tilt_axis = "auto";slab_fit = true'`, H200):
// the pairs' own along-axis error is the smaller, and the fit's is larger.
constexpr int kAcrossShapes = 6, kAlongShapes = 0, kSteps = 3;
// Over a range beyond this on content the tracks placed (on_layers), the
// views tilted further are each free in the fit beside the shapes.
constexpr double kFreeBeyond = 64.0;
// The held views are smoothed by a Gaussian of this share of a fit pixel
// before anything moves them. A bilinear sample blurs by how far it falls
// between pixels (half a pixel: [1/2 1/2], half the finest detail's
// contrast), so views moved by different fractions differ in detail no
// slab explains, and the fit traded its shapes against that: on the
// 256-px wide slab (seed 8) the residual at the true offsets lay above
// the one at the fit's, which stayed 0.092 px off across the axis. With
// half a fit pixel the wide slab comes out 0.082 / 0.080 / 0.080 px
// gauge-free on seeds 7 / 8 / 9 (was 0.082 / 0.120 / 0.155), 0.110 at
// 100 photons (was 0.237), the other thick slabs within 0.008 either way
// (`python3 bench/tilt_accuracy.py --noise 0 1000 100 --no-reference
// --variants defaults --cases slab slab-offset slab-oblique slab-layers
// slab-wide --seed 8`); at 512 px (H200) a whole held pixel did less
// than two on every slab.
constexpr double kSmoothing = 0.5;
// With CUDA the depth scan's supports are built this many ahead of it
// (depth_scan.hpp), so the host's rays for one overlap the GPU's factors
// of another: on an H100 the 512-px zebrafish slabs' scan took 0.59-0.68
// s against 0.67-0.75 built one at a time, the job 1.71-2.11 against
// 1.83-2.05 (three slabs, three runs each, the builds alternating in one
// call; `shifts.csv` the same bytes). On the host's threads alone the
// builds are compute-bound and gain nothing from running side by side.
constexpr int kSupportsAhead = 3;
}  // namespace

std::future<void> prepare_slab_fit(const StackPlan& plan) {
    if (!plan.slab_fit) return {};
    // The builders ahead and the scan's own residuals each hold a handle.
    return prepare_least_squares(plan.device, kSupportsAhead + 1);
}

SlabFit fit_slab(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                 std::vector<FrameResult>& results, const TrackedAxis& tracked, bool placed_whole,
                 Verbosity verbosity) {
    const auto start = Clock::now();
    SlabFit out;
    if (!plan.slab_fit) {
        out.why = plan.slab_fit_why;
        return out;
    }
    if (placed_whole) {
        out.why = "a whole object: its centres of mass placed its views";
        log_line(verbosity, "slab fit: not run: " + out.why);
        return out;
    }
    if (plan.slab_fit_auto && !tracked.ran) out.why = "the tracks did not run, so nothing tells how the content fills the depth";
    // Where the tracks took their across-axis corrections (content at a few
    // depths), they put the pairs right within kFreeBeyond degrees, and the
    // fit there would harm (two flat layers over +-60 degrees: 0.032 ->
    // 0.124 px). Beyond it their corrections rest on few positions (a
    // foreshortened patch holds content of layers that slide past each
    // other), and the fit with those views each free beside its shapes
    // takes them from the tracks.
    const bool beyond = widest_tilt(plan.angles, plan.tilt_offset) > kFreeBeyond;  // the angles as read
    if (plan.slab_fit_auto && tracked.across_applied && !beyond)
        out.why = "content at a few depths: the tracks' across-axis corrections stood above their noise and were taken off";
    out.on_layers = tracked.across_applied && beyond;
    const std::vector<int> used = usable_views(plan, search);
    if (out.why.empty() && used.size() < 8) out.why = "too few views";
    if (!out.why.empty()) {
        log_line(verbosity, "slab fit: not run: " + out.why);
        return out;
    }
    std::vector<double> tilts;
    std::vector<Transform> offsets;
    for (int v : used) tilts.push_back(plan.angles[v] - plan.tilt_offset), offsets.push_back(results[v].offset);
    const int across = axis_grid(plan.width, plan.height, plan.tilt_axis, 1).width;
    const int bin = std::max(1, int(std::ceil(double(across) / kFitWidth)));
    const int fine = std::min(bin, kHeldFiner), held_bin = std::max(1, (bin + fine - 1) / fine);
    out.binning = held_bin * fine;

    HeldViews held;
    const AxisGrid grid = axis_grid(plan.width, plan.height, plan.tilt_axis, held_bin);
    held.width = grid.width, held.rows = grid.rows;
    held.valid = covered_rect(grid, offsets);
    const int coarse = 2 * fine;
    out.width = std::min(kFitWidth, held.valid.width / fine);
    out.rows = int(kRows * held.valid.height / fine);
    const int coarse_width = held.valid.width / coarse, coarse_rows = int(kRows * held.valid.height / coarse);
    if (out.width < 16 || out.rows < 4 || coarse_width < 8 || coarse_rows < 2) {
        out.why = "views too small for it";
        log_line(verbosity, "slab fit: not run: " + out.why);
        return out;
    }
    auto part = Clock::now();
    held.pixels.resize(used.size());
    for_each_view_read(frames, used, [&](std::size_t k, const RawFrame& frame) {
        held.pixels[k] = held_view(frame, offsets[k], grid, held.valid, kSmoothing * fine, plan.device);
    });
    out.held_seconds = seconds_since(part);

    // The slab's depth at twice the binning, then the content's place and
    // the smooth errors at the fit's. The angles are the stage's as read:
    // "auto"'s tilt offset is the stretch the pairs match best at, not the
    // slab's plane, and in it the slab needs a deeper support (the bench's
    // slab at 512 px: 0.148 px with it, 0.081 with the angles as read). A
    // plane sought by the same consistency came out 1.5 degrees from the
    // truth on the zebrafish slabs (their content has a plane of its own)
    // and left the slab at +2 degrees at 0.140 px.
    part = Clock::now();
    const FactorLeastSquares factor = least_squares(plan.device);
    const DepthChoice depth =
        choose_depth(mover(held, coarse, coarse_width, coarse_rows, plan.device), coarse_width, tilts, factor,
                     plan.device.backend == Backend::cuda ? kSupportsAhead : 0);
    out.depth_scan_seconds = seconds_since(part);
    part = Clock::now();
    for (std::size_t k = 0; k < depth.tried.size(); ++k) {
        out.depths_tried_px.push_back(double(depth.tried[k]) * coarse * held_bin);
        out.depth_residuals.push_back(depth.residuals[k]);
    }
    if (depth.depth == 0) {
        out.why = "the views fit no slab up to " + std::to_string(int(out.depths_tried_px.back())) + " px deep (" +
                  depth.why + ")";
        log_line(verbosity, "slab fit: not run: " + out.why);
        return out;
    }
    const SlabConsistency slab(out.width, 2 * depth.depth + 1, tilts, factor);
    // The fit's views are moved on the host whatever the backend: its
    // residuals need the moves' slopes, and keeping its box means on the
    // GPU for the content's place alone (14 residuals) took the fit from
    // 0.27-0.39 s to 0.36-0.48 (run.json's slab_fit.fit_seconds on the
    // zebrafish and wide slabs of `python3 bench/tilt_accuracy.py --size 512
    // --noise 1000`, the defaults, CUDA, H100, the builds alternating).
    const ViewMoves move = mover(held, fine, out.width, out.rows, Device{});
    double z = 2 * depth.place;
    z += depth_by_consistency(slab, move, tilts, depth_move(tilts, z), 2);
    const std::vector<double> placed = depth_move(tilts, z);
    const SmoothErrorFit fit = fit_smooth_errors(slab, move, tilts, placed, std::vector<double>(used.size(), 0.0),
                                                 kAcrossShapes, kAlongShapes, kSteps, out.on_layers ? kFreeBeyond : 0.0);
    out.fit_seconds = seconds_since(part);
    out.thickness_px = double(slab.depth()) * out.binning;
    out.depth_chosen_by = depth.chosen_by;
    out.content_depth_px = z * out.binning;
    out.residual_before = fit.residual_before;
    out.residual_after = fit.residual_after;

    // Only the smooth shapes move the views; the content's place in depth
    // (the object's own gauge) stays where the pairs put it.
    AxisGrid frame_grid = grid;
    frame_grid.bin = out.binning;
    double sa = 0, sl = 0;
    for (std::size_t k = 0; k < used.size(); ++k) {
        results[used[k]].offset =
            Transform::translation(frame_shift(frame_grid, fit.across[k], fit.along[k])).then(results[used[k]].offset);
        sa += fit.across[k] * fit.across[k], sl += fit.along[k] * fit.along[k];
    }
    place_excluded_views(plan, results);
    out.across_rms_px = std::sqrt(sa / double(used.size())) * out.binning;
    out.along_rms_px = std::sqrt(sl / double(used.size())) * out.binning;
    out.ran = true;
    out.seconds = seconds_since(start);
    char line[520];
    std::snprintf(line, sizeof line,
                  "slab fit: views binned %d (%d x %d), the slab %.0f px deep (%s) with its content %+.1f px off the "
                  "axis's depth; smooth errors %.3f px RMS across the axis and %.3f along it taken off (residual %.4g "
                  "-> %.4g, %.1f s)%s",
                  out.binning, out.width, out.rows, out.thickness_px,
                  out.depth_chosen_by == "thinnest" ? "the thinnest tried: the residual showed no depth" : "its knee",
                  out.content_depth_px, out.across_rms_px,
                  out.along_rms_px, out.residual_before, out.residual_after, out.seconds,
                  out.on_layers ? "; on content the tracks placed, the views beyond 64 degrees each free" : "");
    log_line(verbosity, line);
    return out;
}

nlohmann::ordered_json slab_fit_record(const SlabFit& s) {
    nlohmann::ordered_json j = {{"ran", s.ran}};
    if (!s.ran) {
        j["why_not"] = s.why;
        if (!s.depths_tried_px.empty()) j["depths_tried_px"] = s.depths_tried_px, j["depth_residuals"] = s.depth_residuals;
        return j;
    }
    j["on_layers"] = s.on_layers;
    j["binning"] = s.binning;
    j["width"] = s.width;
    j["rows"] = s.rows;
    j["thickness_px"] = s.thickness_px;
    j["depth_chosen_by"] = s.depth_chosen_by;
    j["depths_tried_px"] = s.depths_tried_px;
    j["depth_residuals"] = s.depth_residuals;
    j["content_depth_px"] = s.content_depth_px;
    j["residual_before"] = s.residual_before;
    j["residual_after"] = s.residual_after;
    j["across_rms_px"] = s.across_rms_px;
    j["along_rms_px"] = s.along_rms_px;
    j["seconds"] = s.seconds;
    j["held_seconds"] = s.held_seconds;
    j["depth_scan_seconds"] = s.depth_scan_seconds;
    j["fit_seconds"] = s.fit_seconds;
    return j;
}

}  // namespace stackalign
