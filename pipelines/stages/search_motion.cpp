#include "search_motion.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include "../../kernels/refine/pair_moments.hpp"
#include "../../kernels/refine/rigid_refine.hpp"
#include "../../src/alignment/subpixel.hpp"
#include "../run_options.hpp"

namespace stackalign {

// About 128 pixels on the short side: an angle step of 1 degree still moves
// the coarse window's rim by a pixel, and each candidate costs 1/bin^4 of a
// full-resolution search.
int coarse_bin(int width, int height) { return std::max(1, std::min(width, height) / 128); }

SearchSetup coarse_setup(const SearchSetup& fine, int bin, int width, int height) {
    SearchSetup s = fine;
    SearchWindow& w = s.search.window;
    w.x = (w.x + bin - 1) / bin, w.y = (w.y + bin - 1) / bin;
    w.width = std::max(1, fine.search.window.width / bin), w.height = std::max(1, fine.search.window.height / bin);
    // The range in binned pixels, one more for the rounding, as far as the
    // binned frame leaves room around the window.
    const int room = std::min({w.x, w.y, width / bin - w.x - w.width, height / bin - w.y - w.height});
    const int m = std::max(0, std::min((fine.search.max_shift.x + bin - 1) / bin + 1, room));
    s.search.max_shift = {m, m, 0};
    s.subpixel = Subpixel::off;
    return s;
}

RefineParams auto_refinement(const SearchSetup& setup, double r) {
    RefineParams p;
    p.metric = setup.refine_metric;
    return auto_refine_params(p, r);
}

std::string auto_refined_with(const SearchSetup& setup, double r) {
    const RefineParams p = auto_refinement(setup, r);
    return name_of(p.metric) + (p.ncc_sign < 0 ? " (inverted)" : "");
}

namespace {

// The integer answer: the moving view turned back by B = s R(angle) matched
// the reference at shift d', so the reference's content at X lies in the
// moving view at B (X + d' - c) + c = B (X - c) + c + B d'.
Transform with_shift(double angle, double scale, double sx, double sy) {
    const Transform b = rotation_scale(angle, scale);
    return rotation_scale(angle, scale, b.a11 * sx + b.a12 * sy, b.a21 * sx + b.a22 * sy);
}

// pr.shift refined with its angle and scale (subpixel = continuous), then
// pr.measured set from it.
void refine_motion_pair(const StackPlan& plan, const MotionLevel& fine, int ref_slot,
                        PairResult& pr, MotionSearchTimes& times) {
    if (plan.setup.subpixel == Subpixel::continuous) {
        // The refinement samples the moving view itself, not a turned copy.
        const int mov_slot = fine.views.prepare({pr.mov}, ref_slot, {});
        {
            const auto t = Clock::now();
            const SearchWindow& w = plan.setup.search.window;
            // From the features the slots keep: on the GPU, nothing copied back.
            RefineParams p = fine.searcher.refine_params_at(ref_slot, mov_slot, setup_corner(plan.setup), {});
            // Every pixel up to 128x128 of them, every second or third beyond
            // (both frames are smoothed first, at refine_sigma: 1 px unless set, so little falls between).
            const int step = std::max(1, int(std::sqrt(double(w.width) * w.height / 16384.0)));
            SampleGrid grid{w.width, w.height, 1, step, 0};
            grid.origin[0] = w.x, grid.origin[1] = w.y;
            const double cx = (plan.width - 1) / 2.0, cy = (plan.height - 1) / 2.0;
            std::unique_ptr<AffineStatistics> statistics;
            if (plan.setup.refine_auto) {
                // NCC's moments at the search's answer say whether the values
                // are linearly related; where they are, they refine it too.
                RefineParams moments = p;
                moments.metric = Metric::ncc;
                statistics = fine.searcher.affine_statistics(ref_slot, mov_slot, moments, grid);
                pr.linear_r = ncc_of_moments((*statistics)({affine_about(pr.shift, cx, cy)}).data());
                p = auto_refine_params(p, *pr.linear_r);
                if (p.metric != Metric::ncc) statistics.reset();
            }
            if (!statistics) statistics = fine.searcher.affine_statistics(ref_slot, mov_slot, p, grid);
            pr.shift = refine_motion(pr.shift, plan.motion.model, cx, cy, grid, p, *statistics).t;
            times.refine += seconds_since(t);
        }
    }
    pr.measured = pr.shift.offset();
}

// A neighbouring angle's shift peak lies near the best angle's: at the
// wrong angle the peak follows whichever structure of the window dominates
// its score, and turning by one more step moves a structure by the step
// times its distance from the frame centre: up to the window's half
// diagonal plus the window's (and the peak's) offset from the centre, 4.7 px
// for a step of 1 degree and a 384^2 window. On the sample embryo the
// neighbours' peaks moved 1-10 px: those on this reach's rim are searched
// again over the range (5 of 24 there).
ShiftRange neighbour_reach(const StackPlan& plan, const MiPeak& peak) {
    const SearchWindow& w = plan.setup.search.window;
    const ShiftRange& m = plan.setup.search.max_shift;
    const double ox = w.x + (w.width - 1) / 2.0 - (plan.width - 1) / 2.0 + peak.dx;
    const double oy = w.y + (w.height - 1) / 2.0 - (plan.height - 1) / 2.0 + peak.dy;
    const double radius = std::hypot(w.width, w.height) / 2 + std::hypot(ox, oy);
    const int r = int(std::ceil(plan.motion.angle_step * M_PI / 180 * radius)) + 1;
    return {std::min(r, m.x), std::min(r, m.y), 0};
}

bool on_rim(const MiPeak& p, const ShiftRange& reach) {
    return std::abs(p.dx) == reach.x || std::abs(p.dy) == reach.y;
}

// The full-resolution search of angles[first..last] at `scale`, the coarse
// level's best angle `best_a` among them. It is searched over the whole
// range; its neighbours only near its peak (the whole range is 3-7 times as
// many candidates: 2401 against 841 at +-24 px on a 976^2 window), and again
// over the whole range where their peak is on that reach's rim or outscores
// it, so that the peak returned has the range's statistics (peak sharpness,
// the flags) as before. Sets best_a to the angle chosen (ties to the first),
// its score in `row`.
MiPeak search_fine_angles(const StackPlan& plan, const MotionLevel& fine, int ref_slot, int view,
                          const std::vector<double>& angles, double scale, std::size_t first, std::size_t last,
                          std::size_t& best_a, std::vector<double>& row, MotionSearchTimes& times) {
    auto search = [&](std::size_t a, const ShiftRange* reach, const IntShift& centre) {
        ViewInSlot turned{view};
        turned.angle = angles[a], turned.scale = scale;
        const int mov_slot = fine.views.prepare(turned, ref_slot, {});
        const auto t = Clock::now();
        const MiPeak peak = reach ? fine.searcher.search_near(ref_slot, mov_slot, centre, *reach)
                                  : fine.searcher.search(ref_slot, mov_slot);
        times.search += seconds_since(t);
        return peak;
    };
    std::vector<MiPeak> peaks(last - first + 1);
    std::vector<bool> whole(peaks.size(), false);
    MiPeak& coarse_best = peaks[best_a - first];
    coarse_best = search(best_a, nullptr, {}), whole[best_a - first] = true;
    const ShiftRange reach = neighbour_reach(plan, coarse_best);
    const ShiftRange& m = plan.setup.search.max_shift;
    // Centred so that the reach stays inside the range.
    const IntShift centre{std::clamp(coarse_best.dx, reach.x - m.x, m.x - reach.x),
                          std::clamp(coarse_best.dy, reach.y - m.y, m.y - reach.y), 0};
    for (std::size_t a = first; a <= last; ++a) {
        if (a == best_a) continue;
        peaks[a - first] = search(a, &reach, centre);
        if (on_rim(peaks[a - first], reach)) peaks[a - first] = search(a, nullptr, {}), whole[a - first] = true;
    }
    std::size_t chosen = first;
    for (std::size_t a = first; a <= last; ++a) {
        row[a] = peaks[a - first].mi;
        if (peaks[a - first].mi > peaks[chosen - first].mi) chosen = a;
    }
    best_a = chosen;
    if (!whole[chosen - first]) peaks[chosen - first] = search(chosen, nullptr, {});
    return peaks[chosen - first];
}

}  // namespace

void search_motion_pair(const StackPlan& plan, const MotionLevel& fine, const MotionLevel* coarse,
                        PairResult& pr, MotionSearchTimes& times) {
    const MotionSearch& m = plan.motion;
    const std::vector<double> angles = m.angles(), scales = m.scales();
    // Every candidate's shift search, on the coarse level where there is one: scores[scale][angle].
    const MotionLevel& scan = coarse ? *coarse : fine;
    ViewInSlot ref{pr.ref};
    ref.bin = scan.bin;
    const int scan_ref = scan.views.prepare(ref, -1, {});
    std::vector<std::vector<double>> scores(scales.size(), std::vector<double>(angles.size()));
    std::size_t best_a = 0, best_s = 0;
    MiPeak best;
    bool any = false;
    for (std::size_t s = 0; s < scales.size(); ++s)
        for (std::size_t a = 0; a < angles.size(); ++a) {
            ViewInSlot turned{pr.mov};
            turned.angle = angles[a], turned.scale = scales[s], turned.bin = scan.bin;
            const int mov_slot = scan.views.prepare(turned, scan_ref, {});
            const auto t = Clock::now();
            const MiPeak peak = scan.searcher.search(scan_ref, mov_slot);
            times.search += seconds_since(t);
            scores[s][a] = peak.mi;
            // Ties go to the first candidate, so both backends pick the same one.
            if (!any || peak.mi > best.mi) best = peak, best_a = a, best_s = s, any = true;
        }
    const int ref_slot = fine.views.prepare({pr.ref}, -1, {});
    // The angles whose scores are comparable with the best one's (one level):
    // all of them, or the three searched again at full resolution.
    std::size_t first = 0, last = angles.size() - 1;
    if (coarse) {
        // The coarse scores of neighbouring angles differ little (a step
        // moves the coarse rim by about a pixel): the best angle and its two
        // neighbours are searched again at full resolution, which decides,
        // and whose scores the angle's parabola below goes through.
        first = best_a > 0 ? best_a - 1 : 0, last = std::min(best_a + 1, angles.size() - 1);
        best = search_fine_angles(plan, fine, ref_slot, pr.mov, angles, scales[best_s], first, last, best_a,
                                  scores[best_s], times);
    }
    double angle = angles[best_a], scale = scales[best_s];
    pr.peak = best;
    if (plan.setup.subpixel != Subpixel::parabola) {
        // The continuous refinement starts from the grid: the candidates'
        // MI scores agree between the twins only within float rounding, the
        // grid point exactly, so both refine from the same start.
        pr.shift = with_shift(angle, scale, best.dx, best.dy);
    } else {
        // Between grid candidates: a parabola through the best one's
        // neighbours along each axis of the grid (and of the shift), where
        // both neighbours were scored at the best one's level.
        const std::vector<double>& row = scores[best_s];
        if (best_a > first && best_a < last)
            angle += parabolic_offset(row[best_a - 1], row[best_a], row[best_a + 1]) * m.angle_step;
        if (!coarse && best_s > 0 && best_s + 1 < scales.size())
            scale += parabolic_offset(scores[best_s - 1][best_a], scores[best_s][best_a], scores[best_s + 1][best_a]) *
                     m.scale_step;
        const ContinuousShift d = parabola_peak(best);
        pr.shift = with_shift(angle, scale, d.x, d.y);
    }
    refine_motion_pair(plan, fine, ref_slot, pr, times);
}

void search_motion_skip(const StackPlan& plan, const MotionLevel& fine, const Transform& predicted,
                        PairResult& pr, MotionSearchTimes& times) {
    const double angle = angle_of(predicted), scale = scale_of(predicted);
    // The prediction's shift in the turned view: d' = B^-1 d (with_shift's inverse).
    const Transform b = rotation_scale(angle, scale).inverse();
    const double sx = b.a11 * predicted.dx + b.a12 * predicted.dy, sy = b.a21 * predicted.dx + b.a22 * predicted.dy;
    // Searched about it as a translation skip is (the turned view moved
    // there in the same resampling, where the centred range would leave the frame).
    const SkipPlacement skip = place_skip(plan, sx, sy);
    const IntShift& centre = skip.centre;
    const int px = skip.shift_x, py = skip.shift_y;
    const int ref_slot = fine.views.prepare({pr.ref}, -1, {});
    ViewInSlot turned{pr.mov};
    turned.angle = angle, turned.scale = scale, turned.shift_x = px, turned.shift_y = py;
    const int mov_slot = fine.views.prepare(turned, ref_slot, {});
    const auto t = Clock::now();
    pr.peak = fine.searcher.search(ref_slot, mov_slot, centre);
    times.search += seconds_since(t);
    const ShiftRange& m = plan.setup.search.max_shift;
    pr.off_prediction = std::abs(pr.peak.dx) >= m.x || std::abs(pr.peak.dy) >= m.y;
    if (plan.setup.subpixel != Subpixel::parabola) {
        pr.shift = with_shift(angle, scale, px + centre.x + pr.peak.dx, py + centre.y + pr.peak.dy);
    } else {
        const ContinuousShift d = parabola_peak(pr.peak);
        pr.shift = with_shift(angle, scale, px + d.x, py + d.y);
    }
    refine_motion_pair(plan, fine, ref_slot, pr, times);
}

}  // namespace stackalign
