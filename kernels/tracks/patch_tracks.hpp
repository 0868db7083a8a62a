// Patches followed through a tilt series, view after view, for the tilt
// axis's fit (src/alignment/axis_tracks.hpp). The views, on a grid whose y
// axis is the axis being checked, are band-passed (sigma 1 and 4 px, missing
// data as the view's mean) and 32-px patches on a grid over the reference
// view are tracked outwards, each view against its neighbour: the best
// whole-pixel place within 2 px of where the last view's place predicts
// (foreshortened about the axis for a slab), then Gauss-Newton steps on
// cubic samples (a patch against its neighbour's, up to a linear change of
// contrast, linearised about the neighbour's patch so each step samples the
// view once). A patch whose correlation falls below 0.5, or that leaves
// the view's data, ends its track.
//
// The two twins run the same steps (track_steps.hpp) in the same order and
// give the same tracks, bit for bit. On the GPU each (patch, direction) is
// one block; the band-pass is one thread per pixel.
#pragma once
#include <utility>
#include <vector>

#include "../../src/alignment/axis_tracks.hpp"
#include "../../src/core/image.hpp"
#include "../backend.hpp"

namespace stackalign {

// Patches' starting centres on the reference view (grid pixels): about 20
// across, 16 px apart at the closest, at most 100 (patch_tracks.cpp says why).
std::vector<std::pair<double, double>> track_starts(int width, int height);

// cos(tilt) of each view, as both twins stretch patches by them.
std::vector<double> track_cosines(const std::vector<double>& tilts_deg);

// `views`: the series on one grid (NaN where a view has no data); `tilts`
// in degrees; `slab`: a patch's content foreshortens by the cosine of the
// tilt (else it is taken as it is from view to view).
PatchTracks track_patches(const std::vector<ImageF>& views, const std::vector<double>& tilts, int reference,
                          bool slab, const Device& device);

namespace cpu {
PatchTracks track_patches(const std::vector<ImageF>& views, const std::vector<double>& tilts, int reference, bool slab);
}
namespace cuda {
PatchTracks track_patches(const std::vector<ImageF>& views, const std::vector<double>& tilts, int reference, bool slab,
                          int gpu);
}

}  // namespace stackalign
