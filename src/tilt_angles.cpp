#include "tilt_angles.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "error.hpp"

namespace stackalign {

std::vector<double> parse_tilt_angles(const std::string& text, const std::string& path) {
    std::vector<double> out;
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        const auto hash = line.find('#');
        if (hash != std::string::npos) line.erase(hash);
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos) continue;
        const char* start = line.c_str() + first;
        char* end = nullptr;
        const double v = std::strtod(start, &end);
        const bool trailing = std::string(end).find_first_not_of(" \t\r") != std::string::npos;
        if (end == start || trailing || !std::isfinite(v))
            throw InputError(path + ":" + std::to_string(n) + ": expected one tilt angle in degrees per line, got \"" +
                             line.substr(first) + "\"");
        if (std::fabs(v) > 90)
            throw InputError(path + ":" + std::to_string(n) + ": tilt angle " + line.substr(first) +
                             " is outside -90..90 degrees");
        out.push_back(v);
    }
    if (out.empty()) throw InputError(path + ": no tilt angles (empty file)");
    return out;
}

std::vector<double> read_tilt_angles(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open tilt-angle file");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_tilt_angles(text.str(), path);
}

std::vector<double> tilt_range(double start, double step, int count) {
    std::vector<double> out(count);
    for (int i = 0; i < count; ++i) out[i] = start + step * i;
    return out;
}

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
