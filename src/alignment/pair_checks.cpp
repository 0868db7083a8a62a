#include "pair_checks.hpp"

#include <algorithm>
#include <cmath>

#include "../core/median.hpp"

namespace stackalign {

std::vector<double> robust_z(const std::vector<Shift>& shifts, double min_sigma) {
    std::vector<double> z(shifts.size(), 0.0);
    for (int axis = 0; axis < 2; ++axis) {
        std::vector<double> v;
        for (const Shift& s : shifts) v.push_back(axis ? s.dy : s.dx);
        const double med = median(v);
        std::vector<double> dev;
        for (double x : v) dev.push_back(std::fabs(x - med));
        const double sigma = std::max(min_sigma, 1.4826 * median(dev));
        for (std::size_t i = 0; i < v.size(); ++i) z[i] = std::max(z[i], std::fabs(v[i] - med) / sigma);
    }
    return z;
}

void interpolate_flagged(std::vector<Shift>& shifts, const std::vector<bool>& flagged) {
    const int n = int(shifts.size());
    std::vector<int> good;
    for (int i = 0; i < n; ++i)
        if (!flagged[i]) good.push_back(i);
    if (good.empty()) return;
    const std::vector<Shift> in = shifts;
    for (int i = 0; i < n; ++i) {
        if (!flagged[i]) continue;
        const auto after = std::lower_bound(good.begin(), good.end(), i);
        if (after == good.begin()) {
            shifts[i] = in[good.front()];
        } else if (after == good.end()) {
            shifts[i] = in[good.back()];
        } else {
            const int a = *(after - 1), b = *after;
            const double f = double(i - a) / (b - a);
            shifts[i] = {in[a].dx + f * (in[b].dx - in[a].dx), in[a].dy + f * (in[b].dy - in[a].dy)};
        }
    }
}

}  // namespace stackalign
