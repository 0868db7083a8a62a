// The median of a sample, for robust spreads (1.4826 x the median absolute
// deviation) where a few wild values must not set the scale.
#pragma once
#include <algorithm>
#include <vector>

namespace stackalign {

// The middle value, or the mean of the middle two; 0 for none.
inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    const std::size_t m = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + m, v.end());
    const double hi = v[m];
    if (v.size() % 2) return hi;
    return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + m));
}

}  // namespace stackalign
