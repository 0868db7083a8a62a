// The first moments of a tilt series' views, for a whole object that stays
// inside every view. For parallel projections about one axis, the mass of
// each slice is the same at every tilt, and its centre of mass lands at
// c + a cos t + b sin t across the axis and at one place along it
// (Helgason-Ludwig's consistency conditions of order 0 and 1). So each
// view's deviation from the fit of c + a cos t + b sin t (across) and from
// the mean (along) is its misplacement, up to exactly what no alignment of
// projections can tell. Nothing is searched or interpolated between views;
// what it needs is an object inside every view on a flat background.
#pragma once
#include <string>
#include <vector>

#include "transform.hpp"

namespace stackalign {

struct ViewMoments {
    double mass = 0;           // sum of (value - background), of the object's sign
    double across = 0, along = 0;  // centre of mass, pixels from the grid's centre
    double edge_share = 0;     // of the mass, the share in the outer sixteenth of the view on any side
    bool empty = false;        // no sample inside the frame
};

// A view on the axis grid (width across x rows along the axis; NaN outside
// the frame, left out). The background is the median of the outermost two
// columns on either side; an object darker than it (a bright-field image)
// counts as mass too.
ViewMoments view_moments(const float* samples, int width, int rows);

// Each view's misplacement (across, along: the grid's directions, pixels):
// its centre of mass less the object's translation (a cos t + b sin t of
// the fit by c + a cos t + b sin t across the views; the c left is the
// tilt axis off the grid's centre) and less the mean along.
std::vector<Shift> moment_misplacements(const std::vector<ViewMoments>& views, const std::vector<double>& angles_deg);

// Why the moments cannot place these views (`frames`: their indices, for
// the message), or "" where they can: a view
// not wholly inside its frame, mass near the sides of a view (more than
// `edge_share`), or masses that differ by more than `mass_spread` (relative
// to their median).
std::string moments_unusable(const std::vector<ViewMoments>& views, const std::vector<int>& frames, double edge_share,
                             double mass_spread);

}  // namespace stackalign
