// Refine stage: from a search's integer peak to a subpixel answer.
#pragma once
#include <array>

#include "../../kernels/mi_search/mi_search.hpp"
#include "../../src/alignment/transform.hpp"

namespace stackalign {

// The integer peak, refined per axis by a parabola through its neighbours
// when `subpixel`.
Shift refine_peak(const MiPeak& p, bool subpixel);
// Landmarks: where voxel position v lands, moved by the peak (whole
// voxels first, then the subvoxel part).
std::array<double, 3> refine_point(const std::array<double, 3>& v, const MiPeak& p, bool subpixel);

}  // namespace stackalign
