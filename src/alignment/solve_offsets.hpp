// Offsets from overdetermined pairs: each kept view's translation relative
// to the reference, fitted by least squares to every measured pair (i, j)
// (neighbours and views one further apart), so a single pair's error is
// averaged with the others instead of carried along a chain.
#pragma once
#include <vector>

#include "../core/enum_names.hpp"
#include "transform.hpp"

namespace stackalign {

// How per-frame offsets come from the pairs: summed along the chain of
// neighbours, or fitted to the neighbours and the pairs one view further
// apart together (least squares).
enum class OffsetSolve { chain, least_squares };
template <>
struct EnumNames<OffsetSolve> {
    static constexpr const char* names[] = {"chain", "least-squares"};
};

struct PairConstraint {
    int from = 0, to = 0;   // indices into the kept views
    Shift shift;            // content offset of `to` relative to `from`
    double weight = 1;
};

// Offsets of the kept views (index `reference` gets 0). Views no constraint
// reaches keep the offset of the nearest reached view before them (or after,
// at the start); every constraint's residual |offset[to] - offset[from] - shift|
// is returned in `residuals` when given.
std::vector<Shift> solve_offsets(int kept_views, int reference, const std::vector<PairConstraint>& pairs,
                                 std::vector<double>* residuals = nullptr);

// The same for rigid and similarity pairs (`transform` of each constraint:
// the pair's measured transform about the frame centre). Along a chain of
// transforms about one centre, angles and log scales add, so they are fitted
// as offsets are; then the translations d, the pair's offset being
// d_to - A d_from with A = A_to A_from^-1 from the fitted angles and scales.
// `residuals`: each constraint's distance at the frame centre.
struct TransformConstraint {
    int from = 0, to = 0;
    Transform transform;
    double weight = 1;
};
std::vector<Transform> solve_transforms(int kept_views, int reference, const std::vector<TransformConstraint>& pairs,
                                        std::vector<double>* residuals = nullptr);

// How far the triplet (i, i+1, i+2) disagrees: the largest distance between
// where the skip pair and the two neighbours composed put the frame's centre
// and its corners, (+-half_width, +-half_height) from the centre (for
// translations: |d(i,i+1) + d(i+1,i+2) - d(i,i+2)|).
double triplet_inconsistency(const Transform& first, const Transform& second, const Transform& skip,
                             double half_width, double half_height);

}  // namespace stackalign
