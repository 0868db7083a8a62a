// The stretches of a track that the tracks' fits give a point each.
//
// A patch's content follows one 3D point only over a limited turn (its
// features lie at different depths and slide past each other as the
// series tilts), so the axis fit and the across-axis corrections cut each
// track into half-overlapping segments and fit each its own point: every
// view but the first and last few lies in two segments or more, so a
// view's correction is tied to its neighbours' on both sides.
#pragma once
#include <algorithm>
#include <utility>
#include <vector>

namespace stackalign {

// The views [first, last) of each segment of `views` views over a series of
// n: one starting every views / 2, the last reaching view n - 1.
inline std::vector<std::pair<int, int>> segment_windows(int n, int views) {
    std::vector<std::pair<int, int>> w;
    const int step = std::max(1, views / 2);
    for (int first = 0; first < n; first += step) {
        w.emplace_back(first, std::min(n, first + views));
        if (first + views >= n) break;
    }
    return w;
}

}  // namespace stackalign
