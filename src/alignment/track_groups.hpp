// The jackknife's groups of patch tracks: columns of neighbouring tracks,
// not every k-th one.
//
// Patches next to each other see the same features and the same depths,
// so their errors go together; a jackknife whose groups interleave the
// tracks leaves each such cluster mostly in, and states only the scatter
// between neighbours. Leaving out whole columns (the tracks that start at
// one place across the axis, all along it) leaves a cluster out at once,
// so its shared error shows in the spread.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "axis_tracks.hpp"

namespace stackalign {

// Per track, its group among those `counted` (-1 for the others): the
// columns of starts at `reference`, left to right, neighbouring columns
// merged into at most `groups` groups; where fewer than 4 columns hold
// tracks, blocks of tracks in that order instead (a column, then along it
// outwards from the centre). No group is empty.
struct TrackGroups {
    std::vector<int> of;  // per track
    int count = 0;
};
inline TrackGroups track_groups(const PatchTracks& tracks, int reference, const std::vector<bool>& counted,
                                int groups) {
    const double cy = (tracks.height - 1) / 2.0;
    std::vector<int> order;
    for (std::size_t p = 0; p < tracks.x.size(); ++p)
        if (counted[p]) order.push_back(int(p));
    // A track starts at the reference view, so its place there is known;
    // one that is not goes last rather than break the order.
    auto key = [&](int p) {
        const double x = tracks.x[p][reference], y = tracks.y[p][reference];
        if (std::isnan(x) || std::isnan(y)) return std::make_pair(HUGE_VAL, 0.0);
        return std::make_pair(std::round(x), std::fabs(y - cy));
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
    std::vector<int> column(order.size(), 0);
    for (std::size_t r = 1; r < order.size(); ++r)
        column[r] = column[r - 1] + (key(order[r]).first != key(order[r - 1]).first);
    const int columns = order.empty() ? 0 : column.back() + 1;
    TrackGroups g{std::vector<int>(tracks.x.size(), -1), 0};
    if (columns >= 4) {
        g.count = std::min(groups, columns);
        for (std::size_t r = 0; r < order.size(); ++r) g.of[order[r]] = column[r] * g.count / columns;
    } else {
        g.count = std::min<int>(groups, int(order.size()));
        for (std::size_t r = 0; r < order.size(); ++r) g.of[order[r]] = int(r * g.count / order.size());
    }
    return g;
}

}  // namespace stackalign
