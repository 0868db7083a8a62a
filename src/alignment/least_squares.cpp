#include "least_squares.hpp"

#include <algorithm>
#include <string>
#include <utility>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../core/error.hpp"

namespace stackalign {

Eigen::MatrixXd LeastSquaresResidual::residual(const Eigen::MatrixXd& b) const {
    if (b.rows() != rows_)
        throw InternalError("least squares: " + std::to_string(b.rows()) + " rows for a matrix of " +
                            std::to_string(rows_));
    return residual_of(b);
}

namespace {
void check_groups(Eigen::Index cols, int group) {
    if (group <= 0 || cols % group)
        throw InternalError("least squares: " + std::to_string(cols) + " columns in groups of " +
                            std::to_string(group));
}
}  // namespace

std::vector<double> LeastSquaresResidual::sums_of_squares(const Eigen::MatrixXd& b, int group) const {
    check_groups(b.cols(), group);
    if (b.rows() != rows_)
        throw InternalError("least squares: " + std::to_string(b.rows()) + " rows for a matrix of " +
                            std::to_string(rows_));
    return sums_of_squares_of(b, group);
}

bool LeastSquaresResidual::sums_of_squares_on_gpu(const WriteColumnsOnGpu& write, int cols, int group,
                                                  std::vector<double>& sums) const {
    check_groups(cols, group);
    return sums_of_squares_written_of(write, cols, group, sums);
}

CompressedSparseRows transposed(const CompressedSparseRows& a) {
    const int rows = a.rows(), columns = a.columns;
    int blocks = 1;
#ifdef _OPENMP
    blocks = std::max(1, std::min(omp_get_max_threads(), rows));
#endif
    auto first_row = [&](int b) { return int((long long)rows * b / blocks); };
    // Each block of rows counts its entries per column, then writes them
    // from where the earlier blocks' end: every column's entries in row
    // order, whatever the blocks.
    std::vector<std::vector<int>> next(std::size_t(blocks), std::vector<int>(std::size_t(columns), 0));
#pragma omp parallel for schedule(static)
    for (int b = 0; b < blocks; ++b)
        for (int e = a.start[std::size_t(first_row(b))]; e < a.start[std::size_t(first_row(b + 1))]; ++e)
            ++next[std::size_t(b)][std::size_t(a.column[std::size_t(e)])];
    CompressedSparseRows t;
    t.columns = rows;
    t.start.assign(std::size_t(columns) + 1, 0);
    for (int c = 0; c < columns; ++c) {
        int at = t.start[std::size_t(c)];
        for (int b = 0; b < blocks; ++b) at += std::exchange(next[std::size_t(b)][std::size_t(c)], at);
        t.start[std::size_t(c) + 1] = at;
    }
    t.column.resize(a.column.size());
    t.value.resize(a.value.size());
#pragma omp parallel for schedule(static)
    for (int b = 0; b < blocks; ++b) {
        std::vector<int>& at = next[std::size_t(b)];
        for (int i = first_row(b); i < first_row(b + 1); ++i)
            for (int e = a.start[std::size_t(i)]; e < a.start[std::size_t(i) + 1]; ++e) {
                const int k = at[std::size_t(a.column[std::size_t(e)])]++;
                t.column[std::size_t(k)] = i;
                t.value[std::size_t(k)] = a.value[std::size_t(e)];
            }
    }
    return t;
}

double normal_trace(const CompressedSparseRows& r) {
    std::vector<double> diagonal(std::size_t(r.columns), 0.0);
    for (std::size_t e = 0; e < r.value.size(); ++e) diagonal[std::size_t(r.column[e])] += r.value[e] * r.value[e];
    double sum = 0;
    for (double d : diagonal) sum += d;
    return sum;
}

}  // namespace stackalign
