// What alignment derives from a series' tilt angles: the reference view,
// the cosine stretch between neighbouring views, and the parts of the
// views' places across the axis that are the object's or the tilt axis's.
#pragma once
#include <array>
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
// null), the others 0: what the views' content tells of their placement
// where it fixes neither the object's place nor the tilt axis's. Moving the
// object by (X, Z) moves view t's content by X cos t + Z sin t; moving every
// view by c puts the tilt axis c off the views' centre, which content seen
// over a short range of tilts does not show (a track's point absorbs it).
std::vector<double> less_object_place(const std::vector<double>& across, const std::vector<double>& angles_deg,
                                      const std::vector<bool>* in = nullptr);

// The least-squares c, a, b of across = c + a cos t + b sin t over the
// views `in` marks (every view where it is null).
std::array<double, 3> object_place_fit(const std::vector<double>& across, const std::vector<double>& angles_deg,
                                       const std::vector<bool>* in = nullptr);

// `across` less only the a cos t + b sin t of that fit: the object's own
// translation. The c left is where the tilt axis lies off the views'
// centre, which a reconstruction about the centre sees (on the bench's
// whole object: `python3 bench/tilt_accuracy.py --cases whole`).
std::vector<double> less_object_translation(const std::vector<double>& across, const std::vector<double>& angles_deg);

}  // namespace stackalign
