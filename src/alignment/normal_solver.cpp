#include "normal_solver.hpp"

namespace stackalign {

double normal_trace(const SparseRows& r, int columns) {
    std::vector<double> diagonal(std::size_t(columns), 0.0);
    for (const auto& row : r)
        for (const auto& [c, w] : row) diagonal[std::size_t(c)] += w * w;
    double sum = 0;
    for (double d : diagonal) sum += d;
    return sum;
}

}  // namespace stackalign
