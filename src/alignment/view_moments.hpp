// The first moments of a tilt series' views, for a whole object. For
// parallel projections about one axis, the mass of each slice is the same
// at every tilt, and its centre of mass lands at c + a cos t + b sin t
// across the axis and at one place along it (Helgason-Ludwig's consistency
// conditions of order 0 and 1), and so do those of any set of slices. So
// each view's deviation from the fit of c + a cos t + b sin t (across) and
// from the mean (along) is its misplacement, up to exactly what no
// alignment of projections can tell. Nothing is searched or interpolated
// between views; what it needs is slices inside every view on a flat
// background.
#pragma once
#include <string>
#include <vector>

#include "transform.hpp"

namespace stackalign {

struct ViewMoments {
    double mass = 0;           // sum of (value - background), of the object's sign
    double across = 0, along = 0;  // centre of mass, pixels from the grid's centre
    double left_out = 0;       // of the mass, the share in rows left out
    bool empty = false;        // no mass in the rows taken
};

// A view on the axis grid (width across x rows along the axis; NaN outside
// the frame, left out) row by row, each row one slice of the object: its
// mass less the view's background (the median of its outermost two
// columns on either side; an object darker than it, a bright-field image,
// counts as mass too), its moment across (mass x pixels from the grid's
// centre), and its mass in the outer sixteenth of the row's samples inside
// the frame on either side (NaN: a row less than half inside the frame).
struct RowMoments {
    std::vector<double> mass, moment, at_sides;
};
RowMoments row_moments(const float* samples, int width, int rows);

// The rows whose slice every view shows whole: at most `edge_share` of the
// row's mass at its sides in every view. A slice's mass and its centre
// across obey the same consistency as the whole object's, so the slices
// that stay in view place the views where the object as a whole leaves
// them (its widest slices cross the sides, or its ends cross the views'
// ends along the axis).
std::vector<char> rows_whole_in_every_view(const std::vector<RowMoments>& views, double edge_share);

// A view's moments over `rows` only: mass, the centre across and along, and
// the share of the view's mass left out.
ViewMoments moments_over_rows(const RowMoments& view, const std::vector<char>& rows);

// Each view's misplacement along the axis (pixels, their mean 0) by its
// slices' masses, which are the same at every tilt: the shift of its mass
// profile over `rows` against the views' mean profile (one linearised
// least-squares step). It holds where the object's ends leave the views,
// where its centre of mass along does not.
std::vector<double> along_by_row_masses(const std::vector<RowMoments>& views, const std::vector<char>& rows);

// The turn of the tilt axis (degrees, to add to the one the views were
// sampled about) that makes every view's slice masses agree: projected
// onto the true axis, every view is the object projected onto that line,
// the same at every tilt; onto a line turned from it, a line that turns
// with the tilt. `plus` / `minus`: the same views sampled about the axis
// turned by +-`step_deg`, for the profiles' slope by the turn; each view's
// shift along the axis is fitted with it. One linearised least-squares
// step over `rows`; its standard error by a jackknife over 10 runs of
// neighbouring views, each left out (widened for its 9 degrees of freedom).
struct AxisTurn {
    double degrees = 0, standard_error = 0;
    std::string why_not;  // why the turn cannot be judged, for the log and run.json; "" where it can
    bool usable() const { return why_not.empty(); }
};
AxisTurn axis_turn_by_row_masses(const std::vector<RowMoments>& at, const std::vector<RowMoments>& plus,
                                 const std::vector<RowMoments>& minus, double step_deg, const std::vector<char>& rows);

// Each view's misplacement (across, along: the grid's directions, pixels):
// its centre of mass less the object's translation (a cos t + b sin t of
// the fit by c + a cos t + b sin t across the views; the c left is the
// tilt axis off the grid's centre) and less the mean along.
std::vector<Shift> moment_misplacements(const std::vector<ViewMoments>& views, const std::vector<double>& angles_deg);

// Why the moments cannot place these views (`frames`: their indices, for
// the message), or "" where they can: the rows taken hold less than
// `least_whole` of a view's mass, a view shows nothing, or masses differ
// by more than `mass_spread` (relative to their median).
std::string moments_unusable(const std::vector<ViewMoments>& views, const std::vector<int>& frames, double least_whole,
                             double mass_spread);

}  // namespace stackalign
