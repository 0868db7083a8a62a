// A slab's depth by its views' consistency: supports of rising depth, the
// content placed in each, and the knee of their residuals
// (smooth_errors.hpp's depth_knee).
#pragma once
#include <string>
#include <vector>

#include "least_squares.hpp"
#include "smooth_errors.hpp"

namespace stackalign {

// Depths tried (pixels of the coarse views): each a fifth or so deeper,
// from 2 to `deepest`.
std::vector<int> depths_to_try(int deepest);

struct DepthChoice {
    int depth = 0;     // coarse pixels; 0 where the residuals show no knee
    double place = 0;  // coarse pixels, the content's middle against the support's
    std::vector<int> tried;
    std::vector<double> residuals;
    // "knee", or "thinnest" where the residual fell too little to the
    // knee to show a depth (depth_knee's kNoFall); where depth is 0, why
    // the residuals show no slab at all.
    std::string chosen_by, why;
};

// The slab's depth and the content's place by the consistency of the
// views `move` gives, `width` px across, over depths_to_try(width / 2).
// A support's projector and factors hang on its width, its depth and the
// tilts alone, not on the views, so with `ahead` > 0 the next `ahead`
// supports are built while the scan measures the current one, each on a
// thread of its own (with the host's threads shared between them): the
// same supports, so the same answer to the bit.
DepthChoice choose_depth(const ViewMoves& move, int width, const std::vector<double>& tilts,
                         const FactorLeastSquares& factor, int ahead = 0);

}  // namespace stackalign
