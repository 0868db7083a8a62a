// The residual of a regularised least-squares fit, b - P (P^T P + w I)^-1
// P^T b, for a sparse P whose cells pair with their mirror images (cell i
// with cells - 1 - i) so that P^T P splits into two halves: the slab fit's
// (slab_consistency.hpp), one P per depth tried and solved for every slice
// and every error shape. kernels/least_squares holds the CPU and CUDA
// twins, each of which forms the halves' normal matrices, factors them and
// runs the products, so that on a GPU the columns cross to it once each way.
#pragma once
#include <Eigen/Dense>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace stackalign {

// A sparse matrix's rows: row i's entries are start[i] .. start[i + 1] - 1
// of `column` (ascending within the row) and `value`.
struct CompressedSparseRows {
    int columns = 0;
    std::vector<int> start{0}, column;
    std::vector<double> value;
    int rows() const { return int(start.size()) - 1; }
};

// The transpose, each of its rows in the original's row order: the same
// entries a serial transpose gives. On the threads: the slab fit
// transposes a P of a million entries or more per depth tried.
CompressedSparseRows transposed(const CompressedSparseRows& a);

// R^T R's diagonal summed, each entry's squares in the rows' order and the
// entries in the columns': the CPU twin's own sums, so a weight made of it
// is the same bits on either.
double normal_trace(const CompressedSparseRows& r);

// P and its normal matrix's halves. In the pairs' basis, (e_i + e_twin) /
// sqrt 2 (the even half, with a cell that is its own twin last) and (e_i -
// e_twin) / sqrt 2 (the odd), for i < cells / 2, P^T P is block diagonal
// when P's rows map onto one another under the mirror; `even` and `odd`
// are P in each half's basis, needed only to form the factors. P and P^T
// are shared: the CPU twin keeps them for its products.
struct MirroredLeastSquares {
    std::shared_ptr<const CompressedSparseRows> p, pt;
    CompressedSparseRows even, odd;
    double weight = 0;  // w
    int cells() const { return p->columns; }
};

class LeastSquaresResidual {
public:
    explicit LeastSquaresResidual(int rows) : rows_(rows) {}
    virtual ~LeastSquaresResidual() = default;
    // `b`: P.rows() x k. Every column's residual.
    Eigen::MatrixXd residual(const Eigen::MatrixXd& b) const;
    // The residual's sum of squares over each `group` columns of `b` in
    // turn (k a multiple of `group`): where only that is wanted, a GPU's
    // residual need not come back.
    std::vector<double> sums_of_squares(const Eigen::MatrixXd& b, int group) const;
    // The same for `cols` columns that `write(columns, stream)` puts straight
    // into a GPU's memory (P.rows() x cols at `columns`, column-major, its
    // work queued on `stream`, a cudaStream_t): where this twin keeps its
    // factors on that GPU, their sums into `sums` and true; elsewhere false
    // (the caller then makes the columns on the host).
    using WriteColumnsOnGpu = std::function<void(double* columns, void* stream)>;
    bool sums_of_squares_on_gpu(const WriteColumnsOnGpu& write, int cols, int group, std::vector<double>& sums) const;

private:
    // Each twin's own, `b` and `group` checked.
    virtual Eigen::MatrixXd residual_of(const Eigen::MatrixXd& b) const = 0;
    virtual std::vector<double> sums_of_squares_of(const Eigen::MatrixXd& b, int group) const = 0;
    // A GPU twin's own; the others keep nothing on a GPU.
    virtual bool sums_of_squares_written_of(const WriteColumnsOnGpu&, int, int, std::vector<double>&) const {
        return false;
    }
    int rows_;
};

// The system's factors where the twin keeps them; nullptr where a half's
// normal matrix is not positive definite.
using FactorLeastSquares = std::function<std::unique_ptr<LeastSquaresResidual>(const MirroredLeastSquares&)>;

}  // namespace stackalign
