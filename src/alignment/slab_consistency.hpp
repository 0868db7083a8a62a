// How consistent a slab's views are with some slab: the residual of their
// exact least-squares reconstruction, slice by slice. A slice (one row
// along the tilt axis in every view) is fitted by x = (P^T P + lambda I)^-1
// P^T b in a support as deep as the slab and as wide as any view reaches;
// every slice shares P, so one factor serves them all, and the
// residual b - P x is linear in the views. That linearity is why it is
// exact rather than iterated: a solver stopped after some iterations is
// not linear in the views, and its residual's slope along an error's shape
// is not that error's effect (docs/tomography.md#accuracy-and-its-limits).
#pragma once
#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <memory>
#include <vector>

#include "least_squares.hpp"

namespace stackalign {

class SlabConsistency {
public:
    // Views `width` px across the axis at `tilts_deg`; a slab `depth` px deep
    // about the tilt axis's depth, in the views' pixels. P samples each ray
    // at most every sixteenth of a pixel, bilinearly, through the support:
    // the views' own binning is the band limit, and a coarser projector's
    // own interpolation error reads as inconsistency. `factor` holds the
    // normal matrices' factors and runs the residuals
    // (kernels/least_squares: on the CPU or a GPU).
    SlabConsistency(int width, int depth, const std::vector<double>& tilts_deg, const FactorLeastSquares& factor);

    int width() const { return width_; }
    int depth() const { return depth_; }
    int views() const { return views_; }
    int unknowns() const { return depth_ * support_; }

    // `b`: (views * width) x k, each column one slice's data (view-major:
    // entry v * width + u). The part of each column no slab in the support
    // explains.
    Eigen::MatrixXd residual(const Eigen::MatrixXd& b) const;
    // The residual's sum of squares over each `group` columns of `b` in turn.
    std::vector<double> sums_of_squares(const Eigen::MatrixXd& b, int group) const;
    // The same for columns a GPU writes into its own memory, where the
    // factors are kept there (LeastSquaresResidual::sums_of_squares_on_gpu).
    bool sums_of_squares_on_gpu(const LeastSquaresResidual::WriteColumnsOnGpu& write, int cols, int group,
                                std::vector<double>& sums) const {
        return residual_->sums_of_squares_on_gpu(write, cols, group, sums);
    }

    // P: (views * width) x unknowns, each row one detector pixel's ray.
    Eigen::SparseMatrix<double, Eigen::RowMajor> projector() const;

private:
    int width_ = 0, depth_ = 0, support_ = 0, views_ = 0;
    std::shared_ptr<const CompressedSparseRows> p_;  // P, each row one detector pixel's ray
    // Its residuals, solved in the cells' even and odd halves under the
    // support's half turn (slab_consistency.cpp).
    std::unique_ptr<LeastSquaresResidual> residual_;
};

// How wide a slab `depth` deep reaches into some view `width` px across at
// `tilts_deg`, plus a pixel either side.
int slab_support(int width, int depth, const std::vector<double>& tilts_deg);

}  // namespace stackalign
