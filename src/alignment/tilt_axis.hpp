// The tilt axis of a tilt series found from its views (`[alignment]
// tilt_axis = "auto"`), two ways, by what the specimen is:
// - a slab wider than the field of view (a section, a lamella: cosine
//   stretching on or "auto"): each tilted view, stretched across the
//   candidate axis by cos(partner's tilt) / cos(its tilt), looks like its
//   partner (the view about 5 degrees nearer the reference: a thick slab's
//   layers drift apart with the tilt) only when the axis is right; the
//   score is their normalised cross-correlation at the best shift (FFT),
//   summed;
// - an object inside the field of view (cosine_stretch = false, or "auto"
//   on a series beyond +-80 degrees: e.g. a needle): common lines. Every
//   parallel projection of an object, projected again onto the tilt axis,
//   gives the same 1D profile; the score is the profiles' correlation with
//   the reference's.
// Both compare band-passed views (difference of Gaussians, sigma 1 and 4
// pixels) inside a tapered circle, so that no direction is favoured.
#pragma once
#include <vector>

#include "../core/image.hpp"
#include "view_correlation.hpp"

namespace stackalign {

struct TiltAxisEstimate {
    double axis_deg = 0;        // counter-clockwise from the image y axis, in (-90, 90]
    double standard_error = 0;  // jackknife over the views compared, degrees
    int views = 0;              // views compared with the reference
    std::vector<double> angles, scores;  // the fine search's curve (mean correlation per candidate axis)
};

// `views`: the series (any size; the same for all), `tilts` their tilt
// angles in degrees, `reference` the lowest tilt (the common lines'
// reference; the slab's partners lie between it and each view), `max_lag` how far (pixels of `views`) a view may be shifted;
// `slab` picks the method above. Candidates cover 180 degrees at 3-degree
// steps (8 of the views), then +-3 degrees around the best at 0.2 (every
// view whose cosine is 5-80 % below the reference's), then a parabola
// through the best three. The standard error is the jackknife's over the
// compared views: their scatter, not any bias of the method. `correlator`
// makes the slab's comparisons (kernels/view_correlation: the CPU or a GPU).
TiltAxisEstimate estimate_tilt_axis(const std::vector<ImageF>& views, const std::vector<double>& tilts, int reference,
                                    int max_lag, bool slab, const MakeViewCorrelator& correlator);

// A slab's tilt-angle offset (`[alignment] tilt_offset = "auto"`): where
// the stage's zero is not the slab's, every view is foreshortened by
// cos(tilt + offset), so the stretch that turns a view into its partner's
// foreshortening (as above, about `axis_deg`) fits best at the true
// offset. Candidates -15..15 degrees at 1 (fewer where a view would near
// edge-on), then 0.1 around the best, then a parabola; the standard error
// is the jackknife's over the compared views. A whole object's views fix
// no zero tilt: an offset only turns its reconstruction. `finer`: the same
// views binned less (`finer_lag` their max_lag), or none: their partners
// are chosen and the 0.1 degree pass made again on them from the estimate.
struct TiltOffsetEstimate {
    double offset_deg = 0;
    double standard_error = 0;
    int views = 0;
    bool at_edge = false;  // the best candidate at the end of the range: no peak found
};
TiltOffsetEstimate estimate_tilt_offset(const std::vector<ImageF>& views, const std::vector<double>& tilts,
                                        int reference, int max_lag, double axis_deg,
                                        const MakeViewCorrelator& correlator, const std::vector<ImageF>& finer = {},
                                        int finer_lag = 0);

}  // namespace stackalign
