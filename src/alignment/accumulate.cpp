#include "accumulate.hpp"

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

std::vector<Shift> chain_offsets(int views, const std::vector<int>& kept, const std::vector<Shift>& pair_shift,
                                 int reference) {
    const auto r = std::find(kept.begin(), kept.end(), reference);
    if (r == kept.end() || pair_shift.size() + 1 != kept.size()) throw std::invalid_argument("chain_offsets: bad chain");
    const std::vector<Shift> at_kept = accumulate_shifts(pair_shift, int(r - kept.begin()));
    std::vector<Shift> out(views);
    std::size_t next = 0;  // first kept view at or after v
    for (int v = 0; v < views; ++v) {
        while (next < kept.size() && kept[next] < v) ++next;
        if (next < kept.size() && kept[next] == v) {
            out[v] = at_kept[next];
        } else if (next == 0) {
            out[v] = at_kept.front();
        } else if (next == kept.size()) {
            out[v] = at_kept.back();
        } else {
            const Shift &a = at_kept[next - 1], &b = at_kept[next];
            const double f = double(v - kept[next - 1]) / (kept[next] - kept[next - 1]);
            out[v] = {a.dx + f * (b.dx - a.dx), a.dy + f * (b.dy - a.dy)};
        }
    }
    return out;
}

double parabolic_offset(double l, double c, double r) {
    if (!std::isfinite(l) || !std::isfinite(r)) return 0.0;  // peak on the edge of the search square
    const double curvature = l - 2 * c + r;
    if (!(curvature < 0)) return 0.0;  // flat or not a maximum
    return std::clamp(0.5 * (l - r) / curvature, -0.5, 0.5);
}

}  // namespace stackalign
