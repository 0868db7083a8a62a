#include "tilt_geometry.hpp"

#include <Eigen/Dense>
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

std::array<double, 3> object_place_fit(const std::vector<double>& across, const std::vector<double>& angles_deg,
                                       const std::vector<bool>* in) {
    std::vector<int> rows;
    for (int k = 0; k < int(across.size()); ++k)
        if (!in || (*in)[k]) rows.push_back(k);
    Eigen::MatrixXd basis(rows.size(), 3);
    Eigen::VectorXd y(rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const double t = angles_deg[rows[r]] * M_PI / 180.0;
        basis.row(r) << 1.0, std::cos(t), std::sin(t);
        y[r] = across[rows[r]];
    }
    const Eigen::Vector3d fit = basis.colPivHouseholderQr().solve(y);
    return {fit[0], fit[1], fit[2]};
}

namespace {

// `across` less its fit by c + a cos t + b sin t (less only a cos t + b sin t
// with `keep_axis_place`) over the views `in` marks, the others 0.
std::vector<double> less_fit(const std::vector<double>& across, const std::vector<double>& angles_deg,
                             const std::vector<bool>* in, bool keep_axis_place) {
    const std::array<double, 3> fit = object_place_fit(across, angles_deg, in);
    std::vector<double> out(across.size(), 0.0);
    for (int k = 0; k < int(across.size()); ++k) {
        if (in && !(*in)[k]) continue;
        const double t = angles_deg[k] * M_PI / 180.0;
        out[k] = across[k] - (keep_axis_place ? 0.0 : fit[0]) - fit[1] * std::cos(t) - fit[2] * std::sin(t);
    }
    return out;
}

}  // namespace

std::vector<double> less_object_place(const std::vector<double>& across, const std::vector<double>& angles_deg,
                                      const std::vector<bool>* in) {
    return less_fit(across, angles_deg, in, false);
}

std::vector<double> less_object_translation(const std::vector<double>& across, const std::vector<double>& angles_deg) {
    return less_fit(across, angles_deg, nullptr, true);
}

}  // namespace stackalign
