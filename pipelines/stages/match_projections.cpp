#include "match_projections.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include <omp.h>

#include "../../kernels/cuda_api.hpp"
#include "../../kernels/tomo/tomo.hpp"
#include "../../src/alignment/projection_views.hpp"
#include "../../src/alignment/sine_mode.hpp"
#include "../../src/alignment/subpixel.hpp"
#include "../../src/core/interrupt.hpp"
#include "../../src/core/progress.hpp"
#include "../../src/core/workers.hpp"
#include "accumulate.hpp"
#include "grid_views.hpp"
#include "refine.hpp"

namespace stackalign {
namespace {

// "auto" binning: at most this many pixels across the axis.
constexpr int kAutoBinnedWidth = 256;
constexpr int kMeanRadius = 2;
constexpr double kAxisReach = 3.0;  // degrees
constexpr double kSineClear = 3;     // standard errors: see view_moves
constexpr int kCommonRamp = 4;       // pixels: the taper to the views' common field
// The "auto" thickness's deep reconstruction takes every kDepthRowStep-th
// row (slice): its energy over depth is a sum over slices, and a
// specimen's layers run through many of them. With all the rows it took
// 4.7 of the 121 x 512^2 tilt job's 21.8 s of CPU matching on 2 cores,
// with every 4th 1.2; the thickness chosen is the same on the slab, the
// slab at 84 degrees and the whole object of `python3
// bench/tilt_accuracy.py` (1000 photons, projection_matching = true).
constexpr int kDepthRowStep = 4;

std::vector<Transform> offsets_of(const std::vector<FrameResult>& results, const std::vector<int>& order) {
    std::vector<Transform> o;
    for (int v : order) o.push_back(results[v].offset);
    return o;
}

RawFrame as_frame(const float* pixels, int width, int rows) {
    RawFrame f;
    f.type = PixelType::f32;
    f.width = width;
    f.height = rows;
    f.bytes.resize(std::size_t(width) * rows * sizeof(float));
    std::copy_n(reinterpret_cast<const unsigned char*>(pixels), f.bytes.size(), f.bytes.data());
    return f;
}

// The pair search's setup for binned views: the pairs' preprocessing,
// matched by NCC (a view and its reprojection are the same projection, up
// to a linear change of contrast); the same shift range in frame pixels (at
// least 2 binned pixels), the window the rest of the view, centred.
// MI against NCC, along-axis error after matching on the slabs of `python3
// bench/tilt_accuracy.py` (256 px, tilt_offset = "auto"): 0.040 -> 0.034 px
// without noise, 0.041 -> 0.034 at 1000 photons, the +2 degree stage
// offset 0.036 -> 0.032 and at 100 photons 0.040 -> 0.033; the axis at 84
// degrees 0.162 -> 0.130 (0.065 with the views tapered to their common
// field, match_projections).
SearchSetup binned_setup(const SearchSetup& pairs, const AxisGrid& g) {
    SearchSetup s = pairs;
    s.search.metric = Metric::ncc;
    s.refine_metric = Metric::ncc;
    // Intensities, smoothed: a reprojection's fine detail comes from the
    // views next in angle (they fill its neighbourhood in Fourier space),
    // so edges would match each view to its neighbours again; its coarse
    // content comes from the whole series.
    // Measured on the simulated series of tests/test_projection_matching.cpp
    // (RMS error 1.77 px after the pairs): edges 1.73, intensities with a
    // box mean of radius 1 / 2 / 4: 1.20 / 1.17 / 1.31 (15 rounds); binning
    // 2 or 3 made the matches noisier (1.66, 2.33).
    s.preprocess = {kMeanRadius, false, 0.0f, pairs.preprocess.bins};
    s.refine_on = RefineOn::intensity;
    s.refine_sigma = kRefineSigma;  // the views' noise is not the reprojections'; measured at this smoothing
    s.refine_auto = false;          // a view and its reprojection: refined by NCC, as measured
    const ShiftRange& m = pairs.search.max_shift;
    int reach = std::max(2, int(std::ceil(double(std::max(m.x, m.y)) / g.bin)));
    reach = std::min(reach, std::max(1, (std::min(g.width, g.rows) - 8) / 2));
    s.search.max_shift = {reach, reach, 0};
    s.search.window = {reach, reach, 0, g.width - 2 * reach, g.rows - 2 * reach, 1};
    return s;
}

// The correlation of two images (Pearson's, in double, in pixel order).
double correlation(const float* a, const float* b, std::size_t n) {
    double sa = 0, sb = 0;
    for (std::size_t i = 0; i < n; ++i) sa += a[i], sb += b[i];
    const double ma = sa / double(n), mb = sb / double(n);
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double x = a[i] - ma, y = b[i] - mb;
        ab += x * y, aa += x * x, bb += y * y;
    }
    return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

// How well the views, on the grid of tilt axis `axis`, agree with their
// leave-one-out reprojections: the correlation of each view with its
// reprojection, averaged over the views. A wrong axis puts each slice's
// content on different rows of views at different tilts, so the
// reconstruction blurs and no view matches its reprojection as well.
double axis_agreement(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                      const std::vector<int>& order, const std::vector<bool>& used, double axis, int bin,
                      int thickness, std::vector<float>& views) {
    const AxisGrid g = axis_grid(plan.width, plan.height, axis, bin);
    views.assign(std::size_t(g.width) * g.rows * plan.frames, 0.0f);
    grid_views(plan, frames, results, g, order, views);
    const TomoGeometry geometry = tomo_geometry(g.width, g.rows, thickness, plan.angles, used);
    const Reprojection r = reproject_leave_one_out(views, geometry, plan.device, TomoOutputs::projections);
    double sum = 0;
    for (int v : order) {
        const std::size_t at = std::size_t(v) * geometry.view_size();
        sum += correlation(views.data() + at, r.projections.data() + at, geometry.view_size());
    }
    return order.empty() ? 0.0 : sum / double(order.size());
}

// One round's step of the tilt axis (tilt_axis = "auto"): five candidates
// `spacing` apart about `axis`; where the best is an end, more candidates
// beyond it until one scores lower; then a parabola through the best and
// its neighbours, and `spacing` shrinks fourfold. Nothing (the axis left
// as it is) where the agreement still rises at `reach` degrees from
// `origin`: an axis found at the edge of what was searched is no
// estimate. On the bench's slab at 84 degrees, started from the true
// offsets, the agreement fell steadily from 78 to 90 degrees (0.9461 to
// 0.9443) with no peak at the truth, and a step that took its end
// candidate walked 2 degrees a round, through the truth and beyond.
std::optional<double> axis_step(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                                const std::vector<int>& order, const std::vector<bool>& used, double axis,
                                double& spacing, double origin, double reach, int bin, int thickness,
                                std::vector<float>& scratch) {
    constexpr int kHalf = 2;
    std::map<int, double> score;  // candidate k: axis + k * spacing
    auto at = [&](int k) {
        throw_if_interrupted();
        auto [it, fresh] = score.try_emplace(k, 0.0);
        if (fresh) it->second = axis_agreement(plan, frames, results, order, used, axis + k * spacing, bin, thickness, scratch);
        return it->second;
    };
    int best = 0;
    for (int k = -kHalf; k <= kHalf; ++k)
        if (at(k) > at(best)) best = k;
    if (std::abs(best) == kHalf) {  // an end: on beyond it while the agreement rises
        const int dir = best > 0 ? 1 : -1;
        auto beyond = [&](int k) { return std::fabs(axis + k * spacing - origin) > reach; };
        if (beyond(best + dir)) return std::nullopt;
        while (at(best + dir) > at(best)) {
            if (beyond(best + dir)) return std::nullopt;
            best += dir;
        }
    }
    const double found = axis + (best + parabolic_offset(at(best - 1), at(best), at(best + 1))) * spacing;
    spacing /= 4;
    return found;
}

// What moves each view this round, in frame pixels: its match on the grid
// (across the axis only where pm.across), or, along the axis with
// pm.sine_along, the line c sin t fitted to every view's `along` (grid
// rows), its coefficients kept in `out`.
std::vector<Shift> view_moves(const StackPlan& plan, const AxisGrid& grid, const std::vector<int>& order,
                              const std::vector<Shift>& on_grid, const std::vector<double>& along,
                              ProjectionMatchResult& out, Verbosity verbosity, int round) {
    const ProjectionMatchPlan& pm = plan.projection;
    // The line moves the views only where it stands kSineClear standard
    // errors clear of none. Its error takes the views' residuals as
    // independent, and they are not (the pairs' along-axis error is a
    // smooth walk over the tilt), so lines of 2-3 errors were as often
    // wrong as right on the bench: three layers at 512 px -0.048 +- 0.019
    // px a radian where +0.087 was needed (0.068 -> 0.088 px), two layers
    // without noise 2.5 errors (0.022 -> 0.024), and right only on the
    // zebrafish slab at 1000 photons, 2.8 errors (0.060 -> 0.057). Every
    // line that helped more stood 3.5 errors or more clear (`python3
    // bench/tilt_accuracy.py --variants defaults pairs`, docs/tomography.md#one-line-in-sin-t).
    double line_rows = 0;  // grid rows a radian
    if (pm.sine_along && order.size() < 3) {
        log_line(verbosity, "projection matching: fewer than 3 views, no line in sin t to fit; none moved");
    } else if (pm.sine_along) {
        std::vector<double> angles, rows;
        for (int v : order) angles.push_back(plan.angles[v]), rows.push_back(along[v]);
        const SineFit fit = fit_sine(angles, rows);
        const bool clear = std::fabs(fit.c1) >= kSineClear * fit.c1_error;
        line_rows = clear ? fit.c1 : 0.0;
        out.sine_px.push_back(fit.c1 * grid.bin);
        out.sine_error_px.push_back(fit.c1_error * grid.bin);
        out.sine_applied_px.push_back(line_rows * grid.bin);
        char line[200];
        std::snprintf(line, sizeof line, "projection matching round %d: along the axis %.4f +- %.4f px a radian in sin t%s",
                      round, fit.c1 * grid.bin, fit.c1_error * grid.bin, clear ? "" : ": within 3 errors of none, not applied");
        log_line(verbosity, line);
    }
    std::vector<Shift> moves(plan.frames);
    for (int v : order) {
        const double dy = pm.sine_along ? line_rows * std::sin(plan.angles[v] * M_PI / 180) : on_grid[v].dy;
        moves[v] = frame_shift(grid, pm.across ? on_grid[v].dx : 0.0, dy);
    }
    return moves;
}

}  // namespace

ProjectionMatchResult match_projections(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                        std::vector<FrameResult>& results, StageTimes& times, Verbosity verbosity) {
    const ProjectionMatchPlan& pm = plan.projection;
    ProjectionMatchResult out;
    out.binning = pm.binning > 0 ? pm.binning : binning_to_width(plan, kAutoBinnedWidth);
    AxisGrid grid = axis_grid(plan.width, plan.height, plan.tilt_axis, out.binning);
    out.grid_width = grid.width;
    out.across = pm.across;
    out.moves = std::string(pm.across ? "across and along the axis" : "along the axis only (a slab)") +
                (pm.sine_along ? ", along it by one line in sin t" : "");
    out.grid_rows = grid.rows;
    // The views that take part: searched and readable (order), and per frame (used).
    const std::vector<int> order = usable_views(plan, search);
    const std::vector<bool> used = frames_in(plan.frames, order);
    int thickness = std::max(1, int(std::lround(double(pm.thickness) / out.binning)));
    // The views as round 1 reconstructs them (and "auto" thickness measures from).
    std::vector<float> views(std::size_t(grid.width) * grid.rows * plan.frames, 0.0f);
    grid_views(plan, frames, results, grid, order, views);
    if (pm.thickness <= 0) {
        // "auto": reconstructed once as deep as the views are wide (any
        // specimen that stays in the field fits), then as deep as it is.
        // Measured on the simulated 121 x 512x512 series of a 123-px slab:
        // 512 px deep, matching made it worse (3.19 -> 5.60 px); 160, better (2.31).
        const auto t = Clock::now();
        const SliceVolume deep = every_nth_slice_volume(plan, views, grid, used, kDepthRowStep, grid.width);
        thickness = specimen_thickness(deep.volume, deep.geometry);
        out.thickness_seconds = seconds_since(t);
        times.project += out.thickness_seconds;
    }
    out.thickness = thickness * out.binning;
    TomoGeometry geometry = tomo_geometry(grid.width, grid.rows, thickness, plan.angles, used);
    SearchSetup setup = binned_setup(plan.setup, grid);
    // tilt_axis = "auto": the axis is refined with the offsets, each round
    // (common lines, for an object inside the view, land 1-2 degrees off),
    // unless the patch tracks have refined it (axis_by_tracks.hpp): on a
    // slab the views' agreement with their reprojections has no peak at the
    // true axis, and the tracks' fit is first order in it.
    const bool refine_axis = plan.tilt_axis_auto && !plan.tilt_axis_from_tracks;
    out.axis_refined = refine_axis;
    out.tilt_axis = plan.tilt_axis;
    double axis_spacing = 1.0;
    // How far matching may move the axis from the views' estimate: three of
    // its standard errors, at least kAxisReach.
    const double axis_reach = std::max(kAxisReach, 3 * plan.tilt_axis_error);
    std::vector<float> scratch;
    // Each view is matched on its own, so several searchers take views at
    // once (each on a thread and, on the GPU, a stream of its own).
    const int workers = std::max(1, std::min<int>(plan.searchers, int(order.size())));
    std::vector<std::unique_ptr<PairSearcher>> searchers(workers);
    for (FrameResult& f : results) f.coarse = f.offset;

    char line[256];
    std::snprintf(line, sizeof line,
                  "projection matching: views binned %d (%dx%d across x along the axis), slab %d px thick%s, "
                  "at most %d rounds, until no view moves more than %.3g px; views moved %s",
                  out.binning, grid.width, grid.rows, out.thickness, pm.thickness > 0 ? "" : " (auto: the specimen's)",
                  pm.iterations, pm.tolerance, out.moves.c_str());
    log_line(verbosity, line);
    std::vector<double> moved(plan.frames, 0.0);
    const int matched = int(order.size());
    Progress progress("projection matching", pm.iterations * matched, verbosity);
    int done = 0;
    for (int round = 1; round <= pm.iterations; ++round) {
        throw_if_interrupted();
        auto t = Clock::now();
        if (refine_axis) {
            const double before = out.tilt_axis;
            const std::optional<double> step =
                out.axis_refined ? axis_step(plan, frames, results, order, used, out.tilt_axis, axis_spacing,
                                             plan.tilt_axis, axis_reach, out.binning, thickness, scratch)
                                 : std::optional<double>(out.tilt_axis);
            if (!step && out.axis_refined) {
                out.axis_refined = false;
                std::snprintf(line, sizeof line,
                              "projection matching round %d: the views agree with their reprojections better still "
                              "%.1f degrees from the axis found (%.3f); the axis is left there, not refined",
                              round, axis_reach, plan.tilt_axis);
                log_line(verbosity, "warning: " + std::string(line));
            }
            out.tilt_axis = out.axis_refined ? *step : plan.tilt_axis;
            out.axis_per_round.push_back(out.tilt_axis);
            if (out.axis_refined) {
                std::snprintf(line, sizeof line, "projection matching round %d: tilt axis %.3f degrees from y (was %.3f)",
                              round, out.tilt_axis, before);
                log_line(verbosity, line);
            }
            grid = axis_grid(plan.width, plan.height, out.tilt_axis, out.binning);
            geometry = tomo_geometry(grid.width, grid.rows, thickness, plan.angles, used);
            const SearchSetup turned = binned_setup(plan.setup, grid);
            if (turned.search.window.width != setup.search.window.width ||
                turned.search.window.height != setup.search.window.height)
                for (auto& searcher : searchers) searcher.reset();  // the grid's sides swapped at 45 degrees
            setup = turned;
            views.assign(std::size_t(grid.width) * grid.rows * plan.frames, 0.0f);
            out.axis_seconds.push_back(seconds_since(t));
            t = Clock::now();
        }
        if (round > 1 || refine_axis) grid_views(plan, frames, results, grid, order, views);
        // Every view cut to the field all of them cover at their offsets:
        // where the grid is turned against the frame (an axis off 0 and 90
        // degrees) the frame's corners cut each view where its own offset
        // puts them, and matched against the reprojection those cut edges
        // pulled each view back towards its frame. On the bench's slab at
        // 84 degrees (NCC), the along-axis error 0.130 -> 0.065 px; at 0
        // degrees 0.034 either way (ramps of 4 px; 8 and 16: 0.061 and 0.060
        // at 84, 0.037 and 0.046 at 0).
        const GridRect common = covered_rect(grid, offsets_of(results, order));
        if (common.width > 0 && common.height > 0)
            for (int v : order) taper_to_rect(views.data() + std::size_t(v) * grid.width * grid.rows, grid, common, kCommonRamp);
        const Reprojection r = reproject_leave_one_out(views, geometry, plan.device, TomoOutputs::projections);
        out.reconstruct_seconds.push_back(seconds_since(t));

        t = Clock::now();
        std::vector<Shift> matched_on_grid(plan.frames);
        std::vector<double> along(plan.frames, 0.0);
        std::atomic<std::size_t> next{0};
        std::mutex lock;
        // The sine mode measures along the axis by the rows' sums alone; the
        // 2D match is needed only where views move across the axis too.
        const bool search_2d = !pm.sine_along || pm.across;
        const GridRect rows_of = common.width > 0 && common.height > 0 ? common : GridRect{0, 0, grid.width, grid.rows};
        run_workers(workers, [&](int w) {
            if (plan.device.backend == Backend::cuda) cuda::select_device(plan.device.gpu);  // a new thread
            if (search_2d && !searchers[w]) searchers[w] = make_pair_searcher(plan.device, setup);
            for (std::size_t k; (k = next++) < order.size();) {
                throw_if_interrupted();
                const int v = order[k];
                const std::size_t at = std::size_t(v) * geometry.view_size();
                if (search_2d) {
                    PairSearcher& searcher = *searchers[w];
                    searcher.load(0, as_frame(r.projections.data() + at, grid.width, grid.rows));
                    searcher.load(1, as_frame(views.data() + at, grid.width, grid.rows));
                    const MiPeak peak = searcher.search(0, 1);
                    matched_on_grid[v] = refine_shift(searcher, 0, 1, peak, setup.subpixel);
                }
                if (pm.sine_along)
                    along[v] = row_sum_shift(r.projections.data() + at, views.data() + at, grid, rows_of,
                                             setup.search.max_shift.y);
                const std::lock_guard<std::mutex> hold(lock);
                progress.step(++done);
            }
        });
        const std::vector<Shift> measured = view_moves(plan, grid, order, matched_on_grid, along, out, verbosity, round);
        // Each view moves by what it measured, not anchored at the
        // reference: a constant offset of every view (the reference's own
        // error; the tilt axis off the centre) is an error matching can see,
        // and anchoring would keep it. (With edge matching, anchored, fitted
        // for the volume's shift X cos t + Z sin t, or neither all left
        // 1.66-1.73 px; the choice was not measured again on intensities.)
        double worst = 0, squares = 0;
        int counted = 0;
        for (int v : plan.kept) {
            if (used[v]) {
                results[v].offset = Transform::translation(measured[v]).then(results[v].offset);
                moved[v] = std::hypot(measured[v].dx, measured[v].dy);
                worst = std::max(worst, moved[v]);
                squares += moved[v] * moved[v];
                ++counted;
            }
        }
        place_excluded_views(plan, results);
        out.match_seconds.push_back(seconds_since(t));
        out.max_move.push_back(worst);
        out.rms_move.push_back(counted ? std::sqrt(squares / counted) : 0.0);
        std::snprintf(line, sizeof line, "projection matching round %d: views moved %.3f px at most, %.3f px RMS", round,
                      worst, out.rms_move.back());
        log_line(verbosity, line);
        // The sine mode's line is measured from every view at once: it has
        // settled when it lies within kSineClear of its standard errors of none,
        // not when its move falls under a tolerance set for one view's
        // match (on the bench's zebrafish slab over +-70 degrees the first
        // round's line, -0.087 +- 0.021 px a radian, moved no view 0.1 px).
        const bool line_settled = out.sine_px.empty() || std::fabs(out.sine_px.back()) < kSineClear * out.sine_error_px.back();
        const bool settled = pm.sine_along ? line_settled && (!pm.across || worst < pm.tolerance) : worst < pm.tolerance;
        if (settled) {
            out.converged = true;
            break;
        }
    }
    progress.finish();
    if (!out.converged)
        log_line(verbosity, "note: projection matching stopped after " + std::to_string(pm.iterations) +
                                " rounds with views still moving; raise [alignment] projection_iterations");
    for (int v = 0; v < plan.frames; ++v) results[v].projection_residual = used[v] ? moved[v] : std::nan("");
    for (double s : out.axis_seconds) times.project += s;
    for (double s : out.reconstruct_seconds) times.project += s;
    for (double s : out.match_seconds) times.project += s;
    return out;
}

nlohmann::ordered_json projection_record(const ProjectionMatchResult& r) {
    nlohmann::ordered_json j;
    j["binning"] = r.binning;
    j["thickness"] = r.thickness;
    j["grid"] = {r.grid_width, r.grid_rows};
    j["moves"] = r.moves;
    if (!r.sine_px.empty()) {
        j["along_sine_px"] = r.sine_px;
        j["along_sine_error_px"] = r.sine_error_px;
        j["along_sine_applied_px"] = r.sine_applied_px;
    }
    j["rounds"] = r.max_move.size();
    j["converged"] = r.converged;
    j["kept"] = r.kept;
    if (!r.kept_why.empty()) j["kept_why"] = r.kept_why;
    j["max_move_px"] = r.max_move;
    j["rms_move_px"] = r.rms_move;
    if (!r.axis_per_round.empty()) {
        j["tilt_axis"] = r.tilt_axis;
        j["tilt_axis_refined"] = r.axis_refined;
        j["tilt_axis_per_round"] = r.axis_per_round;
        j["axis_seconds"] = r.axis_seconds;
    }
    j["thickness_seconds"] = r.thickness_seconds;
    j["reconstruct_seconds"] = r.reconstruct_seconds;
    j["match_seconds"] = r.match_seconds;
    return j;
}

}  // namespace stackalign
