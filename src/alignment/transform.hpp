// A frame's geometry relative to the reference, in IMOD's convention about
// the frame centre c: the reference's content at X appears in this frame at
// A (X - c) + c + d. The search finds translations today (A = I); rotation
// and scale will set A, and every stage that takes a Transform
// (accumulation, apply, the IMOD writers, shifts.csv) already composes it.
#pragma once
#include <cmath>

namespace stackalign {

// A displacement as one search measured it (content of the moving frame
// relative to the reference frame of the pair), in pixels.
struct Shift {
    double dx = 0, dy = 0;
};

struct Transform {
    double a11 = 1, a12 = 0, a21 = 0, a22 = 1;  // linear part, about the centre
    double dx = 0, dy = 0;                      // content offset

    static Transform translation(double dx, double dy) { return {1, 0, 0, 1, dx, dy}; }
    static Transform translation(const Shift& s) { return translation(s.dx, s.dy); }
    bool is_translation() const { return a11 == 1 && a12 == 0 && a21 == 0 && a22 == 1; }
    Shift offset() const { return {dx, dy}; }
    bool finite() const { return std::isfinite(dx) && std::isfinite(dy); }

    // This transform, then `next`: where the content lands after both.
    // Translations add exactly (no 0 x d terms, so -0 and NaN stay as they were).
    Transform then(const Transform& next) const {
        if (is_translation() && next.is_translation()) return translation(dx + next.dx, dy + next.dy);
        return {next.a11 * a11 + next.a12 * a21, next.a11 * a12 + next.a12 * a22,
                next.a21 * a11 + next.a22 * a21, next.a21 * a12 + next.a22 * a22,
                next.a11 * dx + next.a12 * dy + next.dx, next.a21 * dx + next.a22 * dy + next.dy};
    }
    Transform inverse() const {
        if (is_translation()) return translation(-dx, -dy);
        const double det = a11 * a22 - a12 * a21;
        const double b11 = a22 / det, b12 = -a12 / det, b21 = -a21 / det, b22 = a11 / det;
        return {b11, b12, b21, b22, -(b11 * dx + b12 * dy), -(b21 * dx + b22 * dy)};
    }
};

// The transform a fraction f of the way from a to b (0: a, 1: b), for views
// between two aligned ones; the linear parts are interpolated element by
// element, which is exact for translations and close for small rotations.
inline Transform interpolate(const Transform& a, const Transform& b, double f) {
    auto mix = [f](double u, double v) { return u + f * (v - u); };
    if (a.is_translation() && b.is_translation()) return Transform::translation(mix(a.dx, b.dx), mix(a.dy, b.dy));
    return {mix(a.a11, b.a11), mix(a.a12, b.a12), mix(a.a21, b.a21), mix(a.a22, b.a22), mix(a.dx, b.dx), mix(a.dy, b.dy)};
}

}  // namespace stackalign
