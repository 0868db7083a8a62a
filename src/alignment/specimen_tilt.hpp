// The specimen's tilt on the stage, from the points tracked patches follow
// (across_tracks.hpp): the tilt-angle offset that lays them level.
//
// A constant added to every tilt angle only turns the object the views are
// projections of (the views at t + d of an object are those at t of the
// object turned by d), so no alignment can tell the stage's zero; what
// fixes it is that a section or a lamella is flat: its content lies in
// planes parallel to its faces, level at the stage's zero. IMOD's
// tiltalign levels its fiducials the same way. Here each track segment's
// point (x, z) is turned by candidate offsets and the one under which the
// points' depths gather most tightly is taken: one plane of points (a thin
// section, one layer) or several parallel ones (layers far apart in depth)
// alike. Then a least-squares line through each gathered layer, one slope
// shared, refines it, and a jackknife over groups of tracks gives its
// standard error.
//
// Content that fills a thick slab's depth has no plane of points; its
// depths gather nowhere in particular and the estimate is the content's
// own tilt, not the stage's (docs/tomography.md#tilt-offset).
#pragma once
#include <vector>

#include "across_tracks.hpp"

namespace stackalign {

struct SpecimenTilt {
    bool found = false;
    double offset_deg = 0;      // add to the tilts the points were fitted at
    double standard_error = 0;  // jackknife over the points' groups, degrees
    int points = 0;             // points in the fit (gathered into a layer)
    int layers = 0;             // planes of points found
    double gathered = 0;        // share of the points within a layer
    double spread_px = 0;       // RMS depth of those about their layer's line
    // How far content can tilt the plane: the spread over the points' RMS
    // place across the axis, degrees. A slab's content fills its depth
    // unevenly, so its points' plane leans by about this much however many
    // tracks there are: the 8-px slab of `python3 bench/tilt_accuracy.py`
    // was laid 0.6 degrees off with a jackknife error of 0.11 and a bound of
    // 0.6; one layer 0.02 off (0.01, 0.12).
    double content_bound_deg = 0;
    double stated_error = 0;    // the jackknife's and the content's, in quadrature
    // The points lie in planes: the content bound within the limit below,
    // which parts flat content from content that fills a depth.
    bool planar = false;
};

// Fewer than 20 points: not found.
SpecimenTilt specimen_tilt_from_points(const std::vector<TrackedPoint>& points);

}  // namespace stackalign
