// The motion a stack search looks for between neighbouring frames: a
// translation, a rotation with it (rigid), or a rotation and an isotropic
// scale with it (similarity, for magnification changes). Angles follow
// IMOD's rotation angle: counter-clockwise with x right and y up (row 0 at
// the bottom, as in MRC files), so A = s [cos -sin; sin cos] in a Transform.
#pragma once
#include <cmath>
#include <vector>

#include "../core/enum_names.hpp"
#include "transform.hpp"

namespace stackalign {

enum class MotionModel { translation, rigid, similarity };
template <>
struct EnumNames<MotionModel> {
    static constexpr const char* names[] = {"translation", "rigid", "similarity"};
};

// The candidates of the exhaustive search: every angle in
// [-angle_range, angle_range] at angle_step (degrees), and for similarity
// every scale in [1 - scale_range, 1 + scale_range] at scale_step.
struct MotionSearch {
    MotionModel model = MotionModel::translation;
    double angle_range = 10, angle_step = 1;
    double scale_range = 0.05, scale_step = 0.01;
    bool translation_only() const { return model == MotionModel::translation; }
    std::vector<double> angles() const;
    std::vector<double> scales() const;
};

// A = scale * R(angle_deg), with offset (dx, dy).
inline Transform rotation_scale(double angle_deg, double scale, double dx = 0, double dy = 0) {
    if (angle_deg == 0 && scale == 1) return Transform::translation(dx, dy);
    const double a = angle_deg * M_PI / 180, c = scale * std::cos(a), s = scale * std::sin(a);
    return {c, -s, s, c, dx, dy};
}
// The rotation angle (degrees) and isotropic scale of a transform's linear part.
inline double angle_of(const Transform& t) { return std::atan2(t.a21 - t.a12, t.a11 + t.a22) * 180 / M_PI; }
inline double scale_of(const Transform& t) { return std::sqrt(std::fabs(t.a11 * t.a22 - t.a12 * t.a21)); }

inline std::vector<double> symmetric_steps(double centre, double range, double step) {
    std::vector<double> out;
    const int n = step > 0 ? int(std::floor(range / step + 1e-9)) : 0;
    for (int k = -n; k <= n; ++k) out.push_back(centre + k * step);
    return out;
}
inline std::vector<double> MotionSearch::angles() const {
    return translation_only() ? std::vector<double>{0.0} : symmetric_steps(0, angle_range, angle_step);
}
inline std::vector<double> MotionSearch::scales() const {
    return model == MotionModel::similarity ? symmetric_steps(1, scale_range, scale_step) : std::vector<double>{1.0};
}

}  // namespace stackalign
