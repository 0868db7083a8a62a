// Judging the neighbour shifts of a series after the search: which pairs
// stand out from the rest, and what to put in their place.
#pragma once
#include <vector>

#include "transform.hpp"

namespace stackalign {

// Robust z-score of each shift against all of them: |s - median| / sigma
// per axis, sigma = 1.4826 x the median absolute deviation but at least
// `min_sigma` pixels (a smooth series would otherwise flag sub-pixel
// wobble), the larger of the x and y scores.
std::vector<double> robust_z(const std::vector<Shift>& shifts, double min_sigma = 0.5);

// Flagged entries replaced by linear interpolation between the nearest
// unflagged entries on either side (by position; the nearest one at the
// ends). Left as they are when every entry is flagged.
void interpolate_flagged(std::vector<Shift>& shifts, const std::vector<bool>& flagged);

}  // namespace stackalign
