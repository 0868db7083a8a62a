// Continuous refinement of a stack pair's rigid or similarity transform
// (`[search] transform`): the exhaustive search's best angle, scale and
// whole-pixel shift refined together by maximising the continuous
// refinement's metric (refine.hpp: Parzen MI, or NCC of the values) over the
// search window, the moving frame sampled with cubic B-splines at
// A (X - c) + c + d for every reference pixel X of the window. Scored by the
// same fixed-point statistics as the landmark fit's global refinement, so
// the CPU and CUDA twins take the same path to the same answer.
#pragma once
#include "../../src/alignment/motion.hpp"
#include "../../src/alignment/transform.hpp"
#include "global_refine.hpp"

namespace stackalign {

struct MotionRefineResult {
    Transform t;
    double mi_start = 0, mi_end = 0;
    int evaluations = 0;
};

// `start`: the pair's transform about the frame centre (cx, cy), reference
// pixel -> moving pixel; `window`: the reference pixels scored (2D: depth 1).
// The parameters are the shift, the angle and (similarity) the log of the
// scale, each stepped so that one unit moves the window's farthest corner by
// one pixel, down to 1/64 and a parabola's polish.
MotionRefineResult refine_motion(const Transform& start, MotionModel model, double cx, double cy,
                                 const SampleGrid& window, const RefineParams& p, AffineStatistics& statistics);

// The Affine3 (2D, z kept) of a transform about the centre (cx, cy).
Affine3 affine_about(const Transform& t, double cx, double cy);

}  // namespace stackalign
