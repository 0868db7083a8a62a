// Refine stage: from a search's integer peak to a subpixel answer.
#pragma once
#include <array>

#include "../../kernels/mi_search/mi_search.hpp"
#include "../../kernels/pair_searcher.hpp"
#include "../../src/alignment/transform.hpp"

namespace stackalign {

// The pair's shift from its search's integer peak: as is (off), a parabola
// per axis through the peak's neighbours, or the continuous refinement of
// the searcher's backend.
Shift refine_shift(PairSearcher& searcher, int ref_slot, int mov_slot, const MiPeak& peak, Subpixel mode);
// Landmarks: where voxel position v, searched with the window at `corner`,
// lands: moved by the peak (whole voxels first, then the subvoxel part).
std::array<double, 3> refine_point(PairSearcher& searcher, const std::array<double, 3>& v, const WindowCorner& corner,
                                   const MiPeak& p, Subpixel mode);

}  // namespace stackalign
