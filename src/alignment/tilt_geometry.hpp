// What alignment derives from a series' tilt angles: the reference view,
// the cosine stretch between neighbouring views, and what of a view's
// place across the axis no alignment of projections can tell.
#pragma once
#include <vector>

namespace stackalign {

// The view with the smallest |tilt| among those not excluded (the first of
// equals), as IMOD and AreTomo pick the reference.
int lowest_tilt_view(const std::vector<double>& angles, const std::vector<bool>& excluded);

// How a view at tilt `high` is stretched to look like its neighbour at tilt
// `low` (degrees): by cos(low) / cos(high) perpendicular to the tilt axis,
// the axis being `axis_deg` degrees from the image y axis (counter-
// clockwise, as IMOD's rotation angle). As a 2x2 matrix S about the image
// centre (row-major {s11, s12, s21, s22}).
struct Stretch {
    double s[4] = {1, 0, 0, 1};
    bool identity() const { return s[0] == 1 && s[1] == 0 && s[2] == 0 && s[3] == 1; }
    // The shift d measured between stretched images, in the unstretched view: S^-1 d.
    void unstretch(double& dx, double& dy) const;
};
Stretch cosine_stretch(double low_deg, double high_deg, double axis_deg);

// `across` (per view, across the tilt axis) less its least-squares fit of
// c + a cos t + b sin t over the views `in` marks (every view where it is
// null), the others 0: moving the object by (X, Z) moves view t's content
// by X cos t + Z sin t, so that part is the object's own place, not any
// view's misplacement.
std::vector<double> less_object_place(const std::vector<double>& across, const std::vector<double>& angles_deg,
                                      const std::vector<bool>* in = nullptr);

}  // namespace stackalign
