#include "view_correlation.hpp"

#include <algorithm>
#include <cmath>

namespace stackalign {

// Made once per estimate: per comparison, its square roots and cosines had
// cost a sixth of an estimate.
std::vector<double> circle_taper(int w, int h) {
    const double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0, r = std::min(w, h) / 2.0 - 2;
    std::vector<double> taper(std::size_t(w) * h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double d = r - std::hypot(x - cx, y - cy);
            taper[std::size_t(y) * w + x] = d <= 0 ? 0 : d >= 8 ? 1 : 0.5 - 0.5 * std::cos(M_PI * d / 8);
        }
    return taper;
}

int correlation_grid(int w, int h) {
    int n = 1;
    while (n < std::max(w, h)) n *= 2;
    return n;
}

int usable_lag(int max_lag, int n) { return std::max(0, std::min(max_lag, n / 2 - 2)); }

}  // namespace stackalign
