#include "solve_offsets.hpp"

#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <algorithm>
#include <cmath>

#include "motion.hpp"

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

std::vector<Transform> solve_transforms(int n, int reference, const std::vector<TransformConstraint>& pairs,
                                        std::vector<double>* residuals) {
    // Angles (degrees) and log scales: offsets of a chain, fitted as such.
    std::vector<PairConstraint> turns;
    for (const TransformConstraint& c : pairs)
        turns.push_back({c.from, c.to, {angle_of(c.transform), std::log(scale_of(c.transform))}, c.weight});
    const std::vector<Shift> turn = solve_offsets(n, reference, turns);
    std::vector<Transform> linear(n);
    for (int v = 0; v < n; ++v) linear[v] = rotation_scale(turn[v].dx, std::exp(turn[v].dy));
    // Translations: normal equations of sum w |d_to - A d_from - p|^2, two
    // unknowns per view but the reference's (fixed at 0).
    std::vector<int> column(n, -1);
    int unknowns = 0;
    for (int v = 0; v < n; ++v)
        if (v != reference) column[v] = unknowns, unknowns += 2;
    std::vector<Eigen::Triplet<double>> entries;
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(unknowns);
    // Adds w * (block M at rows of view r, columns of view c).
    auto block = [&](int r, int c, const Eigen::Matrix2d& m, double w) {
        if (column[r] < 0 || column[c] < 0) return;
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) entries.emplace_back(column[r] + i, column[c] + j, w * m(i, j));
    };
    auto relative = [&](int from, int to) {  // A_to A_from^-1
        const Transform t = linear[from].inverse().then(linear[to]);
        Eigen::Matrix2d a;
        a << t.a11, t.a12, t.a21, t.a22;
        return a;
    };
    const Eigen::Matrix2d identity = Eigen::Matrix2d::Identity();
    for (const TransformConstraint& c : pairs) {
        if (c.weight <= 0) continue;
        const Eigen::Matrix2d a = relative(c.from, c.to);
        const Eigen::Vector2d p(c.transform.dx, c.transform.dy);
        block(c.to, c.to, identity, c.weight);
        block(c.from, c.from, a.transpose() * a, c.weight);
        block(c.from, c.to, -a.transpose(), c.weight);
        block(c.to, c.from, -a, c.weight);
        if (column[c.to] >= 0) rhs.segment<2>(column[c.to]) += c.weight * p;
        if (column[c.from] >= 0) rhs.segment<2>(column[c.from]) -= c.weight * (a.transpose() * p);
    }
    // As in solve_offsets: views not reached follow their previous view.
    for (int v = 0; v < n; ++v) block(v, v, identity, 1e-9);
    for (int v = 1; v < n; ++v) {
        block(v - 1, v - 1, identity, 1e-9), block(v, v, identity, 1e-9);
        block(v - 1, v, -identity, 1e-9), block(v, v - 1, -identity, 1e-9);
    }
    Eigen::SparseMatrix<double> m(unknowns, unknowns);
    m.setFromTriplets(entries.begin(), entries.end());
    Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> solver(m);
    const Eigen::VectorXd d = unknowns ? Eigen::VectorXd(solver.solve(rhs)) : Eigen::VectorXd();
    std::vector<Transform> out(n);
    for (int v = 0; v < n; ++v) {
        out[v] = linear[v];
        if (column[v] >= 0) out[v].dx = d[column[v]], out[v].dy = d[column[v] + 1];
    }
    if (residuals) {
        residuals->clear();
        for (const TransformConstraint& c : pairs) {
            const Transform found = out[c.from].inverse().then(out[c.to]);
            residuals->push_back(std::hypot(found.dx - c.transform.dx, found.dy - c.transform.dy));
        }
    }
    return out;
}

double triplet_inconsistency(const Transform& first, const Transform& second, const Transform& skip,
                             double half_width, double half_height) {
    const Transform predicted = first.then(second);
    if (predicted.is_translation() && skip.is_translation())
        return std::hypot(first.dx + second.dx - skip.dx, first.dy + second.dy - skip.dy);
    double worst = 0;
    for (double u : {-half_width, 0.0, half_width})
        for (double v : {-half_height, 0.0, half_height}) {
            const double ex = (predicted.a11 - skip.a11) * u + (predicted.a12 - skip.a12) * v + predicted.dx - skip.dx;
            const double ey = (predicted.a21 - skip.a21) * u + (predicted.a22 - skip.a22) * v + predicted.dy - skip.dy;
            worst = std::max(worst, std::hypot(ex, ey));
        }
    return worst;
}

}  // namespace stackalign
