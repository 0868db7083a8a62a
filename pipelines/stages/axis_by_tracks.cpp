#include "axis_by_tracks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "../../kernels/axis_grid/axis_grid.hpp"
#include "../../kernels/tracks/patch_tracks.hpp"
#include "../../src/alignment/across_tracks.hpp"
#include "../../src/alignment/axis_tracks.hpp"
#include "../../src/alignment/projection_views.hpp"
#include "../../src/core/error.hpp"
#include "../../src/core/interrupt.hpp"
#include "accumulate.hpp"
#include "tilt_axis.hpp"
#include "view_chunks.hpp"

namespace stackalign {
namespace {

// The views are tracked at most this wide across the axis (binned): about
// 20 patches across, each of 32 px, see the views' structure at this size,
// and the fit's precision comes from their number, not their pixels.
constexpr int kTrackedWidth = 512;
// Each binned pixel is the mean of its bin^2 bilinear samples
// (sample_on_axis_grid): on the host's 16 cores most of the tracks' 1.38 s
// on the 4096^2 acquisition job, on the H200 the round is 0.34 s. One
// bilinear sample of the frame's bin x bin block means had taken the
// host's to 0.22 s, but its smoothing varies with where a view's offset
// puts the block grid: on 5760 x 4092 frames (bin 12) the views'
// along-axis places then scattered 0.33 px RMS, were taken off, and left
// the offsets 0.248 px from the truth against 0.005 (`bash
// bench/device.sh acquisition` with ACQ_JOB="acquisition k3").
// The fit is linear in the axis's error, but the first round tracks on a
// grid turned by it: on the bench's series (1000 photons) the first round
// took the axis 1.4-2.6 degrees, the second 0.07-0.13 more, a third at
// most 0.01 (`python3 bench/tilt_accuracy.py --cases slab slab-oblique
// whole-oblique --noise 1000 --variants 'axis=tilt_axis = "auto"'`).
constexpr int kRounds = 2;
// A second round only after a first correction beyond this (degrees): the
// second moved the axis by 3-8 % of the first's correction above.
constexpr double kSettled = 0.05;
// The along-axis corrections are taken off the offsets where their RMS is
// this many times the RMS of their standard errors: they are measured on
// the binned grid. `bench stages "tilt series"` (512 px, bin 1): 0.038 px
// RMS against 0.003 of noise; taken off, the offsets went from 0.034 px
// from the truth to 0.008. `bench stages acquisition` (4096 px, bin 8)
// and "acquisition k3" (bin 12), whose pairs are within 0.001 px: 0.019
// against 0.042 and 0.093 against 0.071; taken off, they left the
// offsets 0.015 and 0.075 px off, left out 0.005 and 0.005 (H200).
constexpr double kAlongSignificant = 2.0;
// The across-axis corrections are taken off where their RMS is this many
// times the RMS of their standard errors: where the tracks disagree with
// the pairs far beyond the tracks' own scatter. The jackknife sees only
// that scatter, not a bias the tracks share: on the bench's slabs whose
// content fills their depth the tracks left the offsets further from the
// truth at 0.9 to 3.2 times their noise (the zebrafish slab 0.072 ->
// 0.119 px, five layers 0.109 -> 0.156, at 84 degrees 0.088 -> 0.155);
// on two and three flat layers far apart in depth, and on the 8-px slab,
// their corrections stood at 70, 61 and 13 times it and took the offsets
// from 0.729 / 1.495 / 0.099 px to 0.035 / 0.051 / 0.020 (`python3
// bench/tilt_accuracy.py --cases slab slab-layers slab-oblique
// slab-layers2 slab-layers3 slab-thin --noise 1000 --no-reference
// --variants defaults`, with the corrections always taken off).
constexpr double kAcrossSignificant = 6.0;
// Where the across-axis corrections are left out (content that fills the
// slab's depth), each track's place along the axis is held over this many
// views for the along-axis corrections, not the axis fit's
// kAxisFitSegmentViews (20): such a patch drifts along the axis as its
// depths slide past each other, and a longer segment hands more of that
// drift to the views (docs/tomography.md#along-the-axis). On the 512-px zebrafish slabs
// (1000 photons, the 2-core machine's simulation, seed 7) the slab 0.103
// -> 0.092 px, at +2 degrees 0.097 -> 0.086, at 84 0.102 -> 0.089 (seeds
// 8, 9: 0.105 -> 0.098, 0.103 -> 0.096); both fits' segments 40 and 200
// views long took the slab at 84 (seed 8) to 0.109 and 0.116. On flat
// layers, whose patches do not drift, 10 views only add noise (one layer
// at 512 px 0.014 -> 0.025 with both fits at 10), so they keep 20
// (`python3 bench/tilt_accuracy.py --size 512 --noise 1000 --no-reference
// --variants defaults`).
constexpr int kDriftingSegment = 10;

}  // namespace

TrackedAxis refine_axis_by_tracks(StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                  std::vector<FrameResult>& results, Verbosity verbosity) {
    const auto start = Clock::now();
    TrackedAxis out;
    out.before_deg = out.axis_deg = plan.tilt_axis;
    // A given axis is held; its tracks still correct the views along and
    // across it.
    const bool fit_axis = plan.tilt_axis_auto;
    if (plan.angles.empty()) return out;
    const std::vector<int> used = usable_views(plan, search);
    const auto ref = std::find(used.begin(), used.end(), plan.reference);
    if (ref == used.end() || used.size() < 3) {
        out.why = "too few views";
        return out;
    }
    std::vector<double> tilts;
    for (int v : used) tilts.push_back(plan.angles[v]);
    const int across = axis_grid(plan.width, plan.height, plan.tilt_axis, 1).width;
    const int bin = std::max(1, int(std::ceil(double(across) / kTrackedWidth)));
    double axis = plan.tilt_axis;
    AxisCorrection c;
    PatchTracks tracks;
    AxisGrid last;
    for (int round = 0; round < (fit_axis ? kRounds : 1); ++round) {
        const AxisGrid grid = axis_grid(plan.width, plan.height, axis, bin);
        std::vector<ImageF> views(used.size());
        for_each_view_read(frames, used, [&](std::size_t k, const RawFrame& frame) {
            views[k] = ImageF::for_overwrite(grid.width, grid.rows);
            sample_on_axis_grid(frame, results[used[k]].offset, grid, views[k].pixels.data(), plan.device);
        });
        try {
            const int reference = int(ref - used.begin());
            tracks = track_patches(views, tilts, reference, plan.stretch, plan.device);
            c = axis_correction_from_tracks(tracks, reference);
        } catch (const InputError& why) {
            out.why = why.what();
            log_line(verbosity, (fit_axis ? "tilt axis: the first estimate kept: " : "tracks: no corrections: ") + out.why);
            return out;
        }
        throw_if_interrupted();
        last = grid;
        if (fit_axis) axis = std::remainder(axis - c.delta_deg, 180.0);
        out.rounds = round + 1;
        out.per_round.push_back(axis);
        if (std::fabs(c.delta_deg) < kSettled) break;
    }
    out.applied = fit_axis;
    out.ran = true;
    out.seconds = seconds_since(start);
    out.axis_deg = axis;
    out.standard_error = c.standard_error;
    out.tracks = c.tracks;
    out.positions = c.positions;
    out.residual_px = c.residual_px;
    // The offsets' along-axis error the last round found, on its grid (the
    // new axis moves what is across and along by a few hundredths of that).
    // RMS over the views, frame pixels.
    auto rms_px = [&](const std::vector<double>& grid_px) {
        double s = 0;
        for (std::size_t k = 0; k < used.size(); ++k) s += grid_px[k] * grid_px[k];
        return std::sqrt(s / double(used.size())) * bin;
    };
    // Across the axis: the views' corrections from the same tracks, each
    // segment of a track a point of its own (across_tracks.hpp).
    std::vector<double> across_px(used.size(), 0.0);
    try {
        const AcrossCorrection a = across_correction_from_tracks(tracks, tilts, int(ref - used.begin()));
        out.across_rms_px = rms_px(a.across_px);
        out.across_segment_views = a.segment_views;
        out.across_noise_px = rms_px(a.across_error_px);
        out.across_applied = out.across_rms_px > kAcrossSignificant * out.across_noise_px;
        if (out.across_applied) across_px = a.across_px;
        out.specimen = specimen_tilt_from_points(a.points);
    } catch (const InputError& why) {
        out.across_why = why.what();
    }
    // Along it: the last round's corrections, or on content that fills the
    // slab's depth the same tracks' places held over shorter segments.
    const bool drifting = out.across_why.empty() && !out.across_applied;
    out.along_segment_views = drifting ? kDriftingSegment : kAxisFitSegmentViews;
    const AxisCorrection along =
        drifting ? axis_correction_from_tracks(tracks, int(ref - used.begin()), kDriftingSegment) : c;
    out.along_rms_px = rms_px(along.along_px);
    out.along_noise_px = rms_px(along.along_error_px);
    out.along_applied = out.along_rms_px > kAlongSignificant * out.along_noise_px;
    if (out.along_applied || out.across_applied) {
        for (std::size_t k = 0; k < used.size(); ++k)
            results[used[k]].offset = Transform::translation(frame_shift(last, across_px[k], out.along_applied ? along.along_px[k] : 0.0))
                                          .then(results[used[k]].offset);
        place_excluded_views(plan, results);
    }
    char line[400];
    std::snprintf(line, sizeof line,
                  "; the views' corrections along the axis, %.3f px RMS against their noise %.3f, %s; across it, "
                  "%.3f against %.3f, %s",
                  out.along_rms_px, out.along_noise_px, out.along_applied ? "taken off the offsets" : "left out (not above it)",
                  out.across_rms_px, out.across_noise_px, out.across_applied ? "taken off" : "left out (not 6 times above it)");
    const std::string corrections = line;
    if (!fit_axis) {
        std::snprintf(line, sizeof line, "tracks: %d patches followed through the aligned views about the axis given (%.2f)",
                      c.tracks, axis);
        log_line(verbosity, line + corrections);
        return out;
    }
    plan.tilt_axis_first = plan.tilt_axis;
    plan.tilt_axis = axis;
    plan.tilt_axis_error = c.standard_error;
    plan.tilt_axis_from_tracks = true;
    std::snprintf(line, sizeof line,
                  "tilt axis: %.2f +- %.2f degrees from y, refined by %d patches tracked through the aligned views "
                  "(from %.2f; %d rounds, along-axis residual %.3f px)",
                  axis, c.standard_error, c.tracks, out.before_deg, out.rounds, c.residual_px);
    log_line(verbosity, line + corrections);
    log_mdoc_axis_gap(plan, axis, "tracks'", verbosity);
    return out;
}

nlohmann::ordered_json tracked_axis_record(const TrackedAxis& t) {
    nlohmann::ordered_json j = {{"applied", t.applied},        {"before_deg", t.before_deg},
                                {"axis_deg", t.axis_deg},      {"standard_error_deg", t.standard_error},
                                {"tracks", t.tracks},          {"positions", t.positions},
                                {"rounds", t.rounds},          {"axis_per_round", t.per_round},
                                {"residual_px", t.residual_px}, {"along_applied", t.along_applied},
                                {"along_rms_px", t.along_rms_px}, {"along_noise_px", t.along_noise_px},
                                {"along_segment_views", t.along_segment_views},
                                {"across_applied", t.across_applied},
                                {"across_segment_views", t.across_segment_views}, {"across_rms_px", t.across_rms_px},
                                {"across_noise_px", t.across_noise_px},
                                {"seconds", t.seconds}};
    if (t.specimen.found)
        j["specimen_tilt"] = {{"offset_deg", t.specimen.offset_deg}, {"standard_error_deg", t.specimen.standard_error},
                              {"layers", t.specimen.layers}, {"points", t.specimen.points},
                              {"gathered", t.specimen.gathered}, {"spread_px", t.specimen.spread_px},
                              {"content_bound_deg", t.specimen.content_bound_deg}};
    if (!t.why.empty()) j["not_applied_why"] = t.why;
    if (!t.across_why.empty()) j["across_not_measured_why"] = t.across_why;
    return j;
}

}  // namespace stackalign
