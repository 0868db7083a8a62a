#include "view_moments.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tilt_geometry.hpp"

namespace stackalign {

ViewMoments view_moments(const float* samples, int width, int rows) {
    ViewMoments m;
    std::vector<float> border;
    const int cols = std::min(2, width / 2);
    for (int j = 0; j < rows; ++j)
        for (int i = 0; i < cols; ++i) {
            border.push_back(samples[std::size_t(j) * width + i]);
            border.push_back(samples[std::size_t(j) * width + width - 1 - i]);
        }
    border.erase(std::remove_if(border.begin(), border.end(), [](float v) { return std::isnan(v); }), border.end());
    if (border.empty()) return m.empty = true, m;
    std::nth_element(border.begin(), border.begin() + border.size() / 2, border.end());
    const double background = border[border.size() / 2];
    const double cu = (width - 1) / 2.0, cw = (rows - 1) / 2.0;
    const int edge = std::max(1, width / 16), edge_rows = std::max(1, rows / 16);
    double mass = 0, su = 0, sw = 0, at_sides = 0, at_ends = 0;
    for (int j = 0; j < rows; ++j)
        for (int i = 0; i < width; ++i) {
            const float v = samples[std::size_t(j) * width + i];
            if (std::isnan(v)) continue;
            const double d = v - background;
            mass += d, su += d * (i - cu), sw += d * (j - cw);
            if (i < edge || i >= width - edge) at_sides += d;
            if (j < edge_rows || j >= rows - edge_rows) at_ends += d;
        }
    m.mass = std::fabs(mass);
    if (mass != 0)
        m.across = su / mass, m.along = sw / mass, m.edge_share = std::max(std::fabs(at_sides), std::fabs(at_ends)) / m.mass;
    return m;
}

std::vector<Shift> moment_misplacements(const std::vector<ViewMoments>& views, const std::vector<double>& angles_deg) {
    const int n = int(views.size());
    std::vector<double> across(n);
    double along = 0;
    for (int k = 0; k < n; ++k) across[k] = views[k].across, along += views[k].along / n;
    const std::vector<double> residual = less_object_translation(across, angles_deg);
    std::vector<Shift> out(n);
    for (int k = 0; k < n; ++k) out[k] = {residual[k], views[k].along - along};
    return out;
}

std::string moments_unusable(const std::vector<ViewMoments>& views, const std::vector<int>& frames, double edge_share,
                             double mass_spread) {
    std::vector<double> masses;
    for (std::size_t k = 0; k < views.size(); ++k) {
        char why[160];
        if (views[k].empty || views[k].mass == 0) {
            std::snprintf(why, sizeof why, "view %d shows nothing", frames[k]);
            return why;
        }
        if (views[k].edge_share > edge_share) {
            std::snprintf(why, sizeof why, "%.1f %% of view %d's mass lies at its sides (the object leaves the view)",
                          100 * views[k].edge_share, frames[k]);
            return why;
        }
        masses.push_back(views[k].mass);
    }
    if (masses.size() < 4) return "fewer than 4 views";
    std::vector<double> sorted = masses;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double median = sorted[sorted.size() / 2];
    for (std::size_t k = 0; k < masses.size(); ++k)
        if (!(std::fabs(masses[k] - median) <= mass_spread * median)) {
            char why[160];
            std::snprintf(why, sizeof why, "view %d's mass differs from the median by %.1f %% (the object is not the same in every view)",
                          frames[k], 100 * std::fabs(masses[k] - median) / std::max(median, 1e-300));
            return why;
        }
    return "";
}

}  // namespace stackalign
