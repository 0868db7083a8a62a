#include "rigid_refine.hpp"

#include <algorithm>
#include <cmath>

#include "pattern_search.hpp"

namespace stackalign {

Affine3 affine_about(const Transform& t, double cx, double cy) {
    Affine3 m{};
    m.m[0][0] = float(t.a11), m.m[0][1] = float(t.a12);
    m.m[1][0] = float(t.a21), m.m[1][1] = float(t.a22);
    m.m[0][3] = float(cx + t.dx - (t.a11 * cx + t.a12 * cy));
    m.m[1][3] = float(cy + t.dy - (t.a21 * cx + t.a22 * cy));
    m.m[2][2] = 1;
    return m;
}

MotionRefineResult refine_motion(const Transform& start, MotionModel model, double cx, double cy,
                                 const SampleGrid& window, const RefineParams& p, AffineStatistics& statistics) {
    const double angle0 = angle_of(start), scale0 = scale_of(start);
    // The window corner farthest from the centre: where an angle or scale
    // step moves content most.
    double radius = 1;
    for (int corner = 0; corner < 4; ++corner) {
        const double x = window.origin[0] + (corner & 1 ? window.width - 1 : 0) - cx;
        const double y = window.origin[1] + (corner & 2 ? window.height - 1 : 0) - cy;
        radius = std::max(radius, std::hypot(x, y));
    }
    std::vector<double> unit = {1.0, 1.0, 180 / M_PI / radius};
    if (model == MotionModel::similarity) unit.push_back(1.0 / radius);
    auto transform = [&](const std::vector<double>& theta) {
        const double scale = unit.size() > 3 ? scale0 * std::exp(theta[3]) : scale0;
        return rotation_scale(angle0 + theta[2], scale, start.dx + theta[0], start.dy + theta[1]);
    };
    auto scores = [&](const std::vector<std::vector<double>>& candidates) {
        std::vector<Affine3> batch;
        for (const auto& c : candidates) batch.push_back(affine_about(transform(c), cx, cy));
        return refine_scores(statistics(batch), p);
    };
    const PatternSearchResult found = pattern_search(unit, scores, true);
    return {transform(found.theta), found.score_start, found.score_end, found.evaluations};
}

}  // namespace stackalign
