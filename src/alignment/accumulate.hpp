// From the transforms between neighbouring views to one transform per frame
// relative to the reference.
#pragma once
#include <vector>

#include "transform.hpp"

namespace stackalign {

// neighbour[i] takes frame i's content to frame i+1's. Returns, per frame,
// its transform relative to `reference` (the identity there), composed
// outward from the reference in both directions.
std::vector<Transform> accumulate(const std::vector<Transform>& neighbour, int reference);

// Transforms of all `views` when only `kept` (ascending view indices,
// including `reference`) were chained: pair[i] takes kept[i]'s content to
// kept[i+1]'s. Views not kept get transforms interpolated by view index
// between the kept views around them, or the nearest kept view's beyond
// either end.
std::vector<Transform> chain_offsets(int views, const std::vector<int>& kept, const std::vector<Transform>& pair,
                                     int reference);
// The same filling-in from transforms already known at the kept views.
std::vector<Transform> spread_to_views(int views, const std::vector<int>& kept, const std::vector<Transform>& at_kept);

}  // namespace stackalign
