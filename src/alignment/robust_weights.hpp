// Tracked positions weighted for the next least-squares fit: 0 beyond 4
// robust sigmas (1.4826 x the median absolute residual of those kept so
// far, at least 0.02 px), else 1.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace stackalign {

// `segments`: vectors of positions with a weight `w`; `residuals`: every
// position's, in the same order.
template <class Segments>
void reweight_positions(Segments& segments, const std::vector<double>& residuals) {
    std::vector<double> kept;
    std::size_t k = 0;
    for (const auto& s : segments)
        for (const auto& p : s) {
            if (p.w > 0) kept.push_back(std::fabs(residuals[k]));
            ++k;
        }
    double limit = 0.02;
    if (!kept.empty()) {
        std::nth_element(kept.begin(), kept.begin() + kept.size() / 2, kept.end());
        limit = std::max(4 * 1.4826 * kept[kept.size() / 2], 0.02);
    }
    k = 0;
    for (auto& s : segments)
        for (auto& p : s) p.w = std::fabs(residuals[k++]) < limit ? 1.0 : 0.0;
}

}  // namespace stackalign
