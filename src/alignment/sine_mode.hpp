// The along-axis moves of a slab's views as one shared line in sin t.
//
// Over a wide tilt range a thick slab's pairs and tracks leave an
// along-axis error c sin t that every view shares (leaning layers pull
// every patch the same way, docs/tomography.md#along-the-axis); no rigid
// shift of a static object explains it, so a reconstruction can see it.
// Matched one by one, each view's along-axis move wanders by its own noise
// round after round; fitted as c0 + c1 sin t over all views, c1 is found
// from the whole series and the per-view noise is left out (c0 is the
// object's own shift along the axis, which no alignment can tell).
#pragma once
#include <vector>

#include "projection_views.hpp"

namespace stackalign {

// How far `view` lies along the axis (grid rows, + down) from `reference`,
// both grid.width x grid.rows on the tilt-axis grid, from their sums over
// the columns of `r` alone: each row's sum over the columns is its
// slice's, whatever moves across the axis, so this sees no across error.
// The shift (within +-`reach` rows) that best correlates the two row
// sums, to a hundredth of a row (cubic interpolation, each moved half
// the shift). A 2D match of a view with its reprojection took part of a
// limited-angle reconstruction's across-axis distortion into its along
// measure and, fitted to sin t, found lines of 0.05-0.18 px a radian where
// the offsets had none (docs/tomography.md#one-line-in-sin-t).
double row_sum_shift(const float* reference, const float* view, const AxisGrid& grid, const GridRect& r, int reach);

struct SineFit {
    double c0 = 0, c1 = 0;  // the moves' mean level and their slope in sin t (pixels a radian)
    double c1_error = 0;    // c1's standard error from the fit's residuals
};
// The least-squares line c0 + c1 sin t through `moves` at `angles_deg`
// (equal lengths, at least three). Throws std::invalid_argument otherwise,
// or where the angles do not spread in sin t.
SineFit fit_sine(const std::vector<double>& angles_deg, const std::vector<double>& moves);

}  // namespace stackalign
