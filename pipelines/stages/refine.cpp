#include "refine.hpp"

#include "../../src/alignment/subpixel.hpp"

namespace stackalign {

Shift refine_shift(PairSearcher& searcher, int ref_slot, int mov_slot, const MiPeak& peak, Subpixel mode) {
    if (mode == Subpixel::off) return {double(peak.centre.x + peak.dx), double(peak.centre.y + peak.dy)};
    const ContinuousShift s = mode == Subpixel::parabola ? parabola_peak(peak) : searcher.refine(ref_slot, mov_slot, peak);
    return {s.x, s.y};
}

std::array<double, 3> refine_point(PairSearcher& searcher, const std::array<double, 3>& v, const WindowCorner& corner,
                                   const MiPeak& p, Subpixel mode) {
    std::array<double, 3> d = {v[0] + p.dx, v[1] + p.dy, v[2] + p.dz};
    if (mode == Subpixel::continuous) {
        const ContinuousShift s = searcher.refine_window(0, 1, corner, p);
        d = {v[0] + s.x, v[1] + s.y, v[2] + s.z};
    } else if (mode == Subpixel::parabola) {
        d[0] += parabolic_offset(p.around[1][0], p.around[1][1], p.around[1][2]);
        d[1] += parabolic_offset(p.around[0][1], p.around[1][1], p.around[2][1]);
        d[2] += parabolic_offset(p.around_z[0], p.around_z[1], p.around_z[2]);
    }
    return d;
}

}  // namespace stackalign
