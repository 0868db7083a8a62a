// What both backends' searchers share.
#include "pair_searcher.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "../src/alignment/subpixel.hpp"
#include "../src/core/error.hpp"
#include "refine/pair_moments.hpp"

namespace stackalign {

void PairSearcher::load_warped(int slot, const RawFrame& frame, const LinearTransform& warp, double fill,
                               const LoadOptions& how) {
    LoadOptions copy = how;
    copy.same_frame = false;
    load(slot, transform_frame(frame, warp, fill), copy);
}

void no_sample_of_projections(const LoadOptions& how) {
    if (how.sample.stride > 1) throw std::logic_error("mtb-projection searchers load whole frames, not a pixel sample");
}

void check_sample(const RawFrame& frame, const LoadOptions& how) {
    const PixelSample& s = how.sample;
    if (s.stride == 1) return;
    if (s.stride < 1 || s.x < 0 || s.x >= s.stride || s.y < 0 || s.y >= s.stride || frame.depth != 1 || how.refine ||
        frame.width <= s.x || frame.height <= s.y)
        throw std::logic_error("a pixel sample (stride " + std::to_string(s.stride) + " from " + std::to_string(s.x) +
                               ", " + std::to_string(s.y) + ") is of a 2D frame's bins, for peaks only");
}

void no_continuous_form() {
    throw UnsupportedError("mtb-projection has no continuous refinement; rigid and similarity motion need "
                           "method = \"window\"");
}

void no_features(int slot) {
    throw std::logic_error("pair searcher slot " + std::to_string(slot) +
                           " was loaded without its refinement features (a search-only candidate)");
}

void check_near(const IntShift& centre, const ShiftRange& reach, const ShiftStep& step, const ShiftRange& range,
                const IntShift& about) {
    auto within = [](int c, int r, int s, int m) { return r >= 0 && s >= 1 && std::abs(c) + r * s <= m; };
    if (!within(centre.x - about.x, reach.x, step.x, range.x) || !within(centre.y - about.y, reach.y, step.y, range.y) ||
        !within(centre.z - about.z, reach.z, step.z, range.z))
        throw std::logic_error("search_near: shifts within (" + std::to_string(reach.x * step.x) + ", " +
                               std::to_string(reach.y * step.y) + ", " + std::to_string(reach.z * step.z) + ") of (" +
                               std::to_string(centre.x) + ", " + std::to_string(centre.y) + ", " +
                               std::to_string(centre.z) + ") leave the searcher's range about (" +
                               std::to_string(about.x) + ", " + std::to_string(about.y) + ", " +
                               std::to_string(about.z) + ")");
}

std::pair<ShiftRange, ShiftStep> sharpness_lattice(const ShiftRange& m) {
    const ShiftStep step{sharpness_step(m.x), sharpness_step(m.y), sharpness_step(m.z)};
    return {ShiftRange{m.x / step.x, m.y / step.y, m.z / step.z}, step};
}

void no_near_search() { throw UnsupportedError("mtb-projection searches its whole shift range about shift 0 only"); }

ContinuousShift parabola_peak(const MiPeak& p) {
    ContinuousShift s{double(p.centre.x + p.dx), double(p.centre.y + p.dy), double(p.centre.z + p.dz)};
    s.x += parabolic_offset(p.around[1][0], p.around[1][1], p.around[1][2]);
    s.y += parabolic_offset(p.around[0][1], p.around[1][1], p.around[2][1]);
    s.z += parabolic_offset(p.around_z[0], p.around_z[1], p.around_z[2]);
    return s;
}

WindowCorner setup_corner(const SearchSetup& setup) {
    const SearchWindow& w = setup.search.window;
    return {w.x, w.y, w.z};
}

RefineRegion refine_region(const SearchSetup& setup, const WindowCorner& corner) {
    const ShiftRange& m = setup.search.max_shift;
    SearchWindow w = setup.search.window;
    w.x = corner.x, w.y = corner.y, w.z = corner.z;
    if (setup.refine_side > 0) {
        if (w.width > setup.refine_side) w.x += (w.width - setup.refine_side) / 2, w.width = setup.refine_side;
        if (w.height > setup.refine_side) w.y += (w.height - setup.refine_side) / 2, w.height = setup.refine_side;
    }
    // The continuous search stays within 0.88 px of an integer peak inside the range.
    return {w, {m.x + 1, m.y + 1, m.z + (m.z > 0)}};
}

RefineParams refine_params_for(const SearchSetup& setup, const WindowCorner& corner, const RefineFeatures& ref,
                               const RefineFeatures& mov, const IntShift& centre) {
    const RefineRegion r = refine_region(setup, corner);
    return refine_params(ref, mov, r.window, centre, r.reach, setup.refine_metric);
}

ContinuousShift refine_search_peak(const SearchSetup& setup, const WindowCorner& corner, const RefineFeatures& ref,
                                   const RefineFeatures& mov, const MiPeak& peak, const PairStatistics& statistics) {
    return refine_search_peak(setup, refine_params_for(setup, corner, ref, mov, peak.centre), peak, statistics);
}

ContinuousShift refine_search_peak(const SearchSetup& setup, const RefineParams& given, const MiPeak& peak,
                                   const PairStatistics& statistics) {
    const IntShift& c = peak.centre;
    const ContinuousShift at{double(c.x + peak.dx), double(c.y + peak.dy), double(c.z + peak.dz)};
    RefineParams p = given;
    if (setup.refine_auto) {
        // NCC's moments at the integer peak say whether the values are
        // linearly related; where they are, NCC refines (auto_refine_params).
        RefineParams moments = given;
        moments.metric = Metric::ncc;
        p = auto_refine_params(given, ncc_of_moments(statistics(moments, {at}).data()));
    }
    return refine_pair(p, [&](const std::vector<ContinuousShift>& s) { return statistics(p, s); }, at,
                       setup.search.window.depth > 1 ? 3 : 2);
}

}  // namespace stackalign
