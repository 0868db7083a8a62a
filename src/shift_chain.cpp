#include "shift_chain.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stackalign {

std::vector<Shift> accumulate_shifts(const std::vector<Shift>& neighbour, int reference) {
    const int n = int(neighbour.size()) + 1;
    if (reference < 0 || reference >= n) throw std::out_of_range("reference frame outside the stack");
    std::vector<Shift> out(n);
    for (int k = reference + 1; k < n; ++k)
        out[k] = {out[k - 1].dx + neighbour[k - 1].dx, out[k - 1].dy + neighbour[k - 1].dy};
    for (int k = reference - 1; k >= 0; --k)
        out[k] = {out[k + 1].dx - neighbour[k].dx, out[k + 1].dy - neighbour[k].dy};
    return out;
}

double parabolic_offset(double l, double c, double r) {
    if (!std::isfinite(l) || !std::isfinite(r)) return 0.0;  // peak on the edge of the search square
    const double curvature = l - 2 * c + r;
    if (!(curvature < 0)) return 0.0;  // flat or not a maximum
    return std::clamp(0.5 * (l - r) / curvature, -0.5, 0.5);
}

}  // namespace stackalign
