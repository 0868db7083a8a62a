// The tracks' outlier rule: 4 robust sigmas (1.4826 x the median absolute
// residual of those kept so far). Tracked positions are weighted by it for
// the next least-squares fit (at least 0.02 px: 0 beyond, else 1), and the
// specimen's tilt drops points by it (specimen_tilt.cpp).
#pragma once
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace stackalign {

// 4 robust sigmas of `magnitudes` (absolute residuals): 4 x 1.4826 x their
// median (the upper of the middle two), at least `floor`; `floor` for none.
inline double robust_limit(std::vector<double> magnitudes, double floor) {
    if (magnitudes.empty()) return floor;
    std::nth_element(magnitudes.begin(), magnitudes.begin() + magnitudes.size() / 2, magnitudes.end());
    return std::max(4 * 1.4826 * magnitudes[magnitudes.size() / 2], floor);
}

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
    const double limit = robust_limit(std::move(kept), 0.02);
    k = 0;
    for (auto& s : segments)
        for (auto& p : s) p.w = std::fabs(residuals[k++]) < limit ? 1.0 : 0.0;
}

}  // namespace stackalign
