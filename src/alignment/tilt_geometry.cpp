#include "tilt_geometry.hpp"

#include <cmath>

namespace stackalign {

int lowest_tilt_view(const std::vector<double>& angles, const std::vector<bool>& excluded) {
    int best = -1;
    for (int i = 0; i < int(angles.size()); ++i)
        if (!excluded[i] && (best < 0 || std::fabs(angles[i]) < std::fabs(angles[best]))) best = i;
    return best;
}

Stretch cosine_stretch(double low_deg, double high_deg, double axis_deg) {
    constexpr double rad = 3.14159265358979323846 / 180.0;
    const double c_low = std::cos(low_deg * rad), c_high = std::cos(high_deg * rad);
    Stretch st;
    // At 90 degrees the view is edge-on and nothing can be stretched back.
    if (c_high < 1e-3 || std::fabs(c_low - c_high) < 1e-12) return st;
    const double k = c_low / c_high;
    // Unit vector perpendicular to the axis; the axis is the image y axis
    // rotated by axis_deg, so the perpendicular is x rotated by the same.
    const double px = std::cos(axis_deg * rad), py = std::sin(axis_deg * rad);
    // S = I + (k - 1) p p^T: scales by k along p, leaves the axis alone.
    st.s[0] = 1 + (k - 1) * px * px;
    st.s[1] = (k - 1) * px * py;
    st.s[2] = (k - 1) * px * py;
    st.s[3] = 1 + (k - 1) * py * py;
    return st;
}

void Stretch::unstretch(double& dx, double& dy) const {
    const double det = s[0] * s[3] - s[1] * s[2];
    const double x = (s[3] * dx - s[1] * dy) / det, y = (-s[2] * dx + s[0] * dy) / det;
    dx = x;
    dy = y;
}

}  // namespace stackalign
