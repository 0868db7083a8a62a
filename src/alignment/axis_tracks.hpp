// The tilt axis refined from feature tracks through an aligned tilt series.
//
// Under parallel projection a point of the specimen stays at one place
// along the tilt axis in every view; only its position across the axis
// changes with the tilt (x cos t + z sin t). If the views are turned by a
// wrong axis, by delta, what they show along their y axis mixes in delta
// times the position across it: v = y + b_view - delta * u. Patches are
// tracked from the reference view outwards, each view against its
// neighbour, and delta is fitted to their along-axis positions by linear
// least squares, with y free per track segment and b free per view (the
// offsets' remaining error along the axis).
//
// Only the along-axis positions enter the fit, so a patch of a thick slab
// whose content sits at no single depth (its across-axis track is no
// point's) still counts: its along-axis position holds as long as its
// content does, and a segment of a few views is short enough for that.
// The stretched-correlation estimate (tilt_axis.hpp) scores a whole view
// at a time, where the axis is a second-order effect; here it is first
// order in every patch away from the axis. Measured on the 256-px slab of
// `python3 bench/tilt_accuracy.py` (docs/tomography.md).
#pragma once
#include <vector>

namespace stackalign {

struct AxisCorrection {
    double delta_deg = 0;       // the views' axis less the true one: subtract it
    double standard_error = 0;  // jackknife over groups of tracks, degrees
    int tracks = 0;             // patches tracked from the reference view
    int positions = 0;          // positions kept in the fit (outliers dropped)
    double residual_px = 0;     // RMS along-axis residual of the kept positions
    // Per view: where its content sits along the axis, grid pixels, against
    // where its offset puts it (the reference's 0): the offsets' own error
    // along the axis, found with delta.
    std::vector<double> along_px;
    // Their standard errors (the jackknife's over the same groups of tracks).
    std::vector<double> along_error_px;
};

// Patches followed through a series (kernels/tracks/patch_tracks.hpp), on
// a grid whose y axis is the axis being checked (width across it, rows
// along it, pixel centres at integers, the axis through the centre): each
// patch's centre in every view, grid pixels, NaN where it was lost.
struct PatchTracks {
    int width = 0, height = 0;  // the grid
    int patch_px = 0;           // a patch's side
    std::vector<std::vector<double>> x, y;  // [patch][view]
};

// delta fitted to the tracks' along-axis places, each held over segments of
// `segment_views` views (half overlapping), with each view's own offset b,
// from the places whose mirror image along the axis (the track started at
// the same place across it and the opposite place along it) was followed
// in the same view; `reference`: the view the tracks start from (its b
// held at 0). Throws InputError when fewer than 4 patches were followed
// beyond the reference view.
constexpr int kAxisFitSegmentViews = 20;
AxisCorrection axis_correction_from_tracks(const PatchTracks& tracks, int reference,
                                           int segment_views = kAxisFitSegmentViews);

}  // namespace stackalign
