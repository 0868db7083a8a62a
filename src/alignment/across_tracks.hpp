// The views' error across the tilt axis, from patches tracked through an
// aligned tilt series (the tracks of axis_tracks.hpp).
//
// Under parallel projection a point (x, z) of the specimen sits at
// x cos t + z sin t across the axis in the view at tilt t. A patch of a
// thick specimen follows no single point for long (its content's depths
// weigh differently as layers slide past each other), but over a few
// views it does: each track is cut into segments, each segment gets a
// point of its own, and each view a correction a shared by every segment
// through it. The pairs of whole views cannot do this: a pair sees every
// depth at once and its match follows the depths that carry its contrast,
// so its error runs the same way for many views and adds up.
#pragma once
#include <vector>

#include "axis_tracks.hpp"

namespace stackalign {

// A track segment's point of the specimen, grid pixels: x across the axis
// from the grid's centre, z in depth; `weight` the inverse of z's variance
// per unit of the positions' noise (a segment at high tilt sees less of
// its depth); `group` its track's jackknife group.
struct TrackedPoint {
    double x = 0, z = 0, weight = 0;
    int group = 0;
};

struct AcrossCorrection {
    // Per view: where its content sits across the axis, grid pixels, against
    // where its offset puts it, with c + a cos t + b sin t removed (the
    // object's own place, which the tracks cannot tell and the pairs keep).
    std::vector<double> across_px;
    std::vector<double> across_error_px;  // jackknife over groups of tracks
    int tracks = 0, positions = 0;
    int segment_views = 0;  // views each segment's point was held over (across_segment_views)
    double residual_px = 0;  // RMS across-axis residual of the kept positions
    std::vector<TrackedPoint> points;  // every segment's, with the corrections taken off
};

// Views a track segment spans at `tilts` (in the tracks' order): 20
// degrees at their median step, at least 6 views.
int across_segment_views(const std::vector<double>& tilts);

// `tilts` in degrees, one per view of `tracks`; `reference`: the view the
// tracks start from. Throws InputError when fewer than 4 patches were
// followed beyond it.
AcrossCorrection across_correction_from_tracks(const PatchTracks& tracks, const std::vector<double>& tilts,
                                               int reference);

}  // namespace stackalign
