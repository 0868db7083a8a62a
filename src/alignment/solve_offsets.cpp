#include "solve_offsets.hpp"

#include <Eigen/Sparse>
#include <cmath>

namespace stackalign {

std::vector<Shift> solve_offsets(int n, int reference, const std::vector<PairConstraint>& pairs,
                                 std::vector<double>* residuals) {
    // Normal equations of sum w (o_to - o_from - d)^2 per axis, with the
    // reference's offset fixed at 0 (its row and column dropped).
    std::vector<int> column(n, -1);
    int unknowns = 0;
    for (int v = 0; v < n; ++v)
        if (v != reference) column[v] = unknowns++;
    std::vector<Eigen::Triplet<double>> entries;
    Eigen::VectorXd bx = Eigen::VectorXd::Zero(unknowns), by = Eigen::VectorXd::Zero(unknowns);
    std::vector<bool> reached(n, false);
    reached[reference] = true;
    for (const PairConstraint& c : pairs) {
        if (c.weight <= 0) continue;
        const int a = column[c.from], b = column[c.to];
        if (b >= 0) entries.emplace_back(b, b, c.weight), bx[b] += c.weight * c.shift.dx, by[b] += c.weight * c.shift.dy;
        if (a >= 0) entries.emplace_back(a, a, c.weight), bx[a] -= c.weight * c.shift.dx, by[a] -= c.weight * c.shift.dy;
        if (a >= 0 && b >= 0) entries.emplace_back(a, b, -c.weight), entries.emplace_back(b, a, -c.weight);
    }
    // Views not connected to the reference get no equation of their own:
    // tie each to its previous view with a tiny weight, so the system stays
    // solvable and they follow their neighbour.
    for (int v = 0; v < n; ++v)
        if (column[v] >= 0) entries.emplace_back(column[v], column[v], 1e-9);
    for (int v = 1; v < n; ++v) {
        const int a = column[v - 1], b = column[v];
        if (a >= 0 && b >= 0) entries.emplace_back(a, a, 1e-9), entries.emplace_back(b, b, 1e-9),
                                  entries.emplace_back(a, b, -1e-9), entries.emplace_back(b, a, -1e-9);
    }
    Eigen::SparseMatrix<double> m(unknowns, unknowns);
    m.setFromTriplets(entries.begin(), entries.end());
    Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> solver(m);
    const Eigen::VectorXd x = unknowns ? Eigen::VectorXd(solver.solve(bx)) : Eigen::VectorXd();
    const Eigen::VectorXd y = unknowns ? Eigen::VectorXd(solver.solve(by)) : Eigen::VectorXd();
    std::vector<Shift> out(n);
    for (int v = 0; v < n; ++v)
        if (column[v] >= 0) out[v] = {x[column[v]], y[column[v]]};
    if (residuals) {
        residuals->clear();
        for (const PairConstraint& c : pairs)
            residuals->push_back(std::hypot(out[c.to].dx - out[c.from].dx - c.shift.dx,
                                            out[c.to].dy - out[c.from].dy - c.shift.dy));
    }
    return out;
}

double triplet_inconsistency(const Shift& first, const Shift& second, const Shift& skip) {
    return std::hypot(first.dx + second.dx - skip.dx, first.dy + second.dy - skip.dy);
}

}  // namespace stackalign
