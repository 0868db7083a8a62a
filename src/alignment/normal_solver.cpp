#include "normal_solver.hpp"

namespace stackalign {

CompressedSparseRows compressed(const SparseRows& r) {
    CompressedSparseRows c;
    c.start.assign(r.size() + 1, 0);
    for (std::size_t i = 0; i < r.size(); ++i) c.start[i + 1] = c.start[i] + int(r[i].size());
    c.column.resize(std::size_t(c.start.back()));
    c.value.resize(std::size_t(c.start.back()));
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < (long long)r.size(); ++i) {
        std::size_t k = std::size_t(c.start[std::size_t(i)]);
        for (const auto& [column, value] : r[std::size_t(i)]) c.column[k] = column, c.value[k] = value, ++k;
    }
    return c;
}

double normal_trace(const SparseRows& r, int columns) {
    std::vector<double> diagonal(std::size_t(columns), 0.0);
    for (const auto& row : r)
        for (const auto& [c, w] : row) diagonal[std::size_t(c)] += w * w;
    double sum = 0;
    for (double d : diagonal) sum += d;
    return sum;
}

}  // namespace stackalign
