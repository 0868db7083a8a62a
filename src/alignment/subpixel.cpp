#include "subpixel.hpp"

#include <algorithm>
#include <cmath>

namespace stackalign {

double parabolic_offset(double l, double c, double r) {
    if (!std::isfinite(l) || !std::isfinite(r)) return 0.0;  // peak on the edge of the search square
    const double curvature = l - 2 * c + r;
    if (!(curvature < 0)) return 0.0;  // flat or not a maximum
    return std::clamp(0.5 * (l - r) / curvature, -0.5, 0.5);
}

}  // namespace stackalign
