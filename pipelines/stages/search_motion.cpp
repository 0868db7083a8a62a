#include "search_motion.hpp"

#include <cmath>

#include "../../kernels/refine/rigid_refine.hpp"
#include "../../src/alignment/subpixel.hpp"
#include "../run_options.hpp"

namespace stackalign {

void search_motion_pair(const StackPlan& plan, const Device& device, PairSearcher& searcher, PreparedViews& views,
                        PairResult& pr, MotionSearchTimes& times) {
    const MotionSearch& m = plan.motion;
    const std::vector<double> angles = m.angles(), scales = m.scales();
    const int ref_slot = views.prepare({pr.ref}, -1, {});
    // The shift search at every (angle, scale): scores[scale][angle].
    std::vector<std::vector<double>> scores(scales.size(), std::vector<double>(angles.size()));
    std::size_t best_a = 0, best_s = 0;
    MiPeak best;
    bool any = false;
    for (std::size_t s = 0; s < scales.size(); ++s)
        for (std::size_t a = 0; a < angles.size(); ++a) {
            ViewInSlot turned{pr.mov};
            turned.angle = angles[a], turned.scale = scales[s];
            const int mov_slot = views.prepare(turned, ref_slot, {});
            const auto t = Clock::now();
            const MiPeak peak = searcher.search(ref_slot, mov_slot);
            times.search += seconds_since(t);
            scores[s][a] = peak.mi;
            // Ties go to the first candidate, so both backends pick the same one.
            if (!any || peak.mi > best.mi) best = peak, best_a = a, best_s = s, any = true;
        }
    pr.peak = best;
    // The integer answer: the moving view turned back by B = s R(angle)
    // matched the reference at shift d', so the reference's content at X
    // lies in the moving view at B (X + d' - c) + c = B (X - c) + c + B d'.
    auto with_shift = [](double angle, double scale, double sx, double sy) {
        const Transform b = rotation_scale(angle, scale);
        return rotation_scale(angle, scale, b.a11 * sx + b.a12 * sy, b.a21 * sx + b.a22 * sy);
    };
    double angle = angles[best_a], scale = scales[best_s];
    if (plan.setup.subpixel == Subpixel::off) {
        pr.shift = with_shift(angle, scale, best.dx, best.dy);
    } else {
        // Between grid candidates: a parabola through the best one's
        // neighbours along each axis of the grid (and of the shift).
        const std::vector<double>& row = scores[best_s];
        if (best_a > 0 && best_a + 1 < angles.size())
            angle += parabolic_offset(row[best_a - 1], row[best_a], row[best_a + 1]) * m.angle_step;
        if (best_s > 0 && best_s + 1 < scales.size())
            scale += parabolic_offset(scores[best_s - 1][best_a], scores[best_s][best_a], scores[best_s + 1][best_a]) *
                     m.scale_step;
        const ContinuousShift d = parabola_peak(best);
        pr.shift = with_shift(angle, scale, d.x, d.y);
    }
    if (plan.setup.subpixel == Subpixel::continuous) {
        // The refinement samples the moving view itself, not a turned copy.
        const int mov_slot = views.prepare({pr.mov}, ref_slot, {});
        const RefineFeatures* rf = searcher.features(ref_slot);
        const RefineFeatures* mf = searcher.features(mov_slot);
        if (rf && mf) {
            const auto t = Clock::now();
            const SearchWindow& w = plan.setup.search.window;
            const RefineParams p = refine_params_for(plan.setup, setup_corner(plan.setup), *rf, *mf);
            SampleGrid grid{w.width, w.height, 1, 1, 0};
            grid.origin[0] = w.x, grid.origin[1] = w.y;
            const auto histograms = make_affine_histograms(*rf, *mf, p, grid, device);
            const double cx = (plan.width - 1) / 2.0, cy = (plan.height - 1) / 2.0;
            pr.shift = refine_motion(pr.shift, m.model, cx, cy, grid, p, *histograms).t;
            times.refine += seconds_since(t);
        }
    }
    pr.measured = pr.shift.offset();
}

}  // namespace stackalign
