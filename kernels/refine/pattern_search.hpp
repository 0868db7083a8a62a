// The deterministic pattern search both transform refinements use (the
// landmark fit's global refinement in 3D, a stack pair's rigid or
// similarity refinement in 2D): every parameter tried at +-step in one
// batch, the best kept while it improves, then the steps halved, from `unit`
// (one pixel or voxel of motion where it matters most) down to unit / 64.
// Deterministic, so twins that score a batch identically take one path.
#pragma once
#include <functional>
#include <vector>

namespace stackalign {

// Scores of a batch of parameter vectors (higher is better).
using BatchScores = std::function<std::vector<double>(const std::vector<std::vector<double>>&)>;

struct PatternSearchResult {
    std::vector<double> theta;      // the answer, starting from zeros
    double score_start = 0, score_end = 0;
    int batches = 0, evaluations = 0;
};

// `polish`: after the finest step, each parameter moved to the vertex of
// the parabola through its last three scores (within +-step), one more
// batch confirming the move: the grid's last 1/128 of a unit then matters
// no more than the score's own smoothness allows.
PatternSearchResult pattern_search(const std::vector<double>& unit, const BatchScores& scores, bool polish = false);

}  // namespace stackalign
