// Regularised normal equations, R^T R + w I for a sparse R, formed and
// factored once and solved against many right-hand sides: the slab fit's
// (slab_consistency.hpp), formed per depth tried and solved for every slice
// and every error shape. kernels/normal_solve holds the CPU and CUDA twins.
#pragma once
#include <Eigen/Dense>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace stackalign {

class NormalSolver {
public:
    virtual ~NormalSolver() = default;
    // x <- A^-1 x, every column.
    virtual void solve_in_place(Eigen::MatrixXd& x) const = 0;
};

// R's rows: each row's (column, value) pairs, columns ascending.
using SparseRows = std::vector<std::vector<std::pair<int, double>>>;

// The factor of R^T R + weight I, R `columns` wide, where the twin keeps
// it; nullptr where that is not positive definite.
using FactorNormal =
    std::function<std::unique_ptr<NormalSolver>(const SparseRows& r, int columns, double weight)>;

// R's rows compressed: row i's entries are start[i] .. start[i + 1] - 1 of
// `column` and `value`. Copied by the threads: the slab fit compresses a
// million entries or more per depth tried.
struct CompressedSparseRows {
    std::vector<int> start, column;
    std::vector<double> value;
};
CompressedSparseRows compressed(const SparseRows& r);

// R^T R's diagonal summed, each entry's squares in the rows' order and the
// entries in the columns': the CPU twin's own sums, so a weight made of it
// is the same bits on either.
double normal_trace(const SparseRows& r, int columns);

}  // namespace stackalign
