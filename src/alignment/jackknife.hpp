// The jackknife's standard error from an estimate made with each of n parts
// left out in turn (Efron): sqrt((n - 1) / n x the sum of squared
// deviations from their mean); 0 for fewer than two.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace stackalign {

inline double jackknife_error(const std::vector<double>& left_out) {
    const std::size_t n = left_out.size();
    double mean = 0;
    for (double v : left_out) mean += v;
    mean /= double(std::max<std::size_t>(n, 1));
    double ss = 0;
    for (double v : left_out) ss += (v - mean) * (v - mean);
    return n > 1 ? std::sqrt(ss * double(n - 1) / double(n)) : 0.0;
}

}  // namespace stackalign
