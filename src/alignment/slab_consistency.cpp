#include "slab_consistency.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../core/error.hpp"

namespace stackalign {
namespace {

// Along each ray, px between samples (bench/consistency_fit.py: the
// simulator's own sampling, bench/tilt_sim.py).
constexpr double kRayStep = 0.25;
// Tikhonov weight, of the normal matrix's mean diagonal: cells the rays
// barely reach stay bounded, and the fit's residual is otherwise that of
// the exact solution (`python3 bench/consistency_fit.py --lam`).
constexpr double kLambda = 1e-3;

constexpr double kPi = 3.14159265358979323846;

using Row = std::vector<std::pair<int, double>>;  // (cell, weight), cells ascending

// One detector pixel's ray through the slab: each sample bilinear in the
// support's cells (cell = z * support + x), duplicates merged.
Row ray_row(double u, double c, double s, int depth, int support) {
    const double cx = (support - 1) / 2.0, cz = (depth - 1) / 2.0;
    const double span = 2 * (cz + 1) / std::fabs(c), from = -u * (s / c) - span / 2;
    Row row;
    for (int k = 0; k * kRayStep < span + kRayStep - 1e-12; ++k) {
        const double ray = from + k * kRayStep;
        const double x = u * c - ray * s + cx, z = u * s + ray * c + cz;
        const double fx0 = std::floor(x), fz0 = std::floor(z);
        const int ix = int(fx0), iz = int(fz0);
        const double fx = x - fx0, fz = z - fz0;
        for (int dz = 0; dz < 2; ++dz)
            for (int dx = 0; dx < 2; ++dx) {
                const int jx = ix + dx, jz = iz + dz;
                if (jx < 0 || jx >= support || jz < 0 || jz >= depth) continue;
                const double w = (dz ? fz : 1 - fz) * (dx ? fx : 1 - fx) * kRayStep;
                if (w != 0) row.emplace_back(jz * support + jx, w);
            }
    }
    std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Row merged;
    for (const auto& e : row) {
        if (!merged.empty() && merged.back().first == e.first)
            merged.back().second += e.second;
        else
            merged.push_back(e);
    }
    return merged;
}

std::vector<Row> projector_rows(int width, int depth, int support, const std::vector<double>& tilts_deg) {
    std::vector<Row> rows(tilts_deg.size() * std::size_t(width));
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < (long long)rows.size(); ++i) {
        const double t = tilts_deg[std::size_t(i / width)] * kPi / 180;
        const double u = double(i % width) - (width - 1) / 2.0;
        rows[std::size_t(i)] = ray_row(u, std::cos(t), std::sin(t), depth, support);
    }
    return rows;
}

Eigen::SparseMatrix<double, Eigen::RowMajor> as_matrix(const std::vector<Row>& rows, int cells) {
    std::vector<Eigen::Triplet<double>> t;
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (const auto& e : rows[i]) t.emplace_back(int(i), e.first, e.second);
    Eigen::SparseMatrix<double, Eigen::RowMajor> p(int(rows.size()), cells);
    p.setFromTriplets(t.begin(), t.end());
    return p;
}

// P^T P + lambda * mean diagonal, its lower triangle (what the factor
// reads). Each thread owns a band of the matrix's rows and visits every
// ray, so the sums run in the rays' order whatever the threads.
Eigen::MatrixXd normal_matrix(const std::vector<Row>& rows, int cells) {
    Eigen::MatrixXd n = Eigen::MatrixXd::Zero(cells, cells);
#pragma omp parallel
    {
        int threads = 1, me = 0;
#ifdef _OPENMP
        threads = omp_get_num_threads();
        me = omp_get_thread_num();
#endif
        const int from = int((long long)cells * me / threads), to = int((long long)cells * (me + 1) / threads);
        for (const Row& r : rows)
            for (std::size_t a = 0; a < r.size(); ++a) {
                if (r[a].first < from || r[a].first >= to) continue;
                for (std::size_t b = 0; b <= a; ++b) n(r[a].first, r[b].first) += r[a].second * r[b].second;
            }
    }
    const double mean = n.diagonal().mean();
    n.diagonal().array() += kLambda * mean;
    return n;
}

// Cholesky factor of `a`'s lower triangle in place, by tiles: Eigen's
// dense LLT runs on one thread, and the slab's normal matrices (thousands
// of unknowns, a factor per depth tried) took most of the stage's time.
// Each tile is updated by the same calls in the same order whatever the
// threads, so the factor is too. False where `a` is not positive definite.
bool factor_in_place(Eigen::MatrixXd& a) {
    constexpr int kTile = 192;
    const int n = int(a.rows());
    for (int k = 0; k < n; k += kTile) {
        const int kb = std::min(kTile, n - k), first = k + kb;
        Eigen::Ref<Eigen::MatrixXd> corner = a.block(k, k, kb, kb);
        Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> diagonal(corner);
        if (diagonal.info() != Eigen::Success) return false;
        const int tiles = (n - first + kTile - 1) / kTile;
        const auto l = a.block(k, k, kb, kb).triangularView<Eigen::Lower>();
#pragma omp parallel for schedule(dynamic, 1)
        for (int i = 0; i < tiles; ++i) {
            auto panel = a.block(first + i * kTile, k, std::min(kTile, n - first - i * kTile), kb);
            l.transpose().solveInPlace<Eigen::OnTheRight>(panel);
        }
        // The trailing lower triangle, a tile pair (i >= j) at a time.
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
        for (int i = 0; i < tiles; ++i)
            for (int j = 0; j < tiles; ++j) {
                if (j > i) continue;
                const int r = first + i * kTile, c = first + j * kTile;
                const int rb = std::min(kTile, n - r), cb = std::min(kTile, n - c);
                a.block(r, c, rb, cb).noalias() -= a.block(r, k, rb, kb) * a.block(c, k, cb, kb).transpose();
            }
    }
    return true;
}

}  // namespace

int slab_support(int width, int depth, const std::vector<double>& tilts_deg) {
    double t_max = 0;
    for (double t : tilts_deg) t_max = std::max(t_max, std::fabs(t) * kPi / 180);
    return int(std::ceil(width / std::cos(t_max) + depth * std::tan(t_max))) + 2;
}

SlabConsistency::SlabConsistency(int width, int depth, const std::vector<double>& tilts_deg)
    : width_(width), depth_(depth), support_(slab_support(width, depth, tilts_deg)), views_(int(tilts_deg.size())) {
    if (width < 2 || depth < 1 || views_ < 2)
        throw InputError("slab fit: too small a slab (" + std::to_string(width) + " px across, " + std::to_string(depth) +
                         " deep, " + std::to_string(views_) + " views)");
    const std::vector<Row> rows = projector_rows(width, depth, support_, tilts_deg);
    p_ = as_matrix(rows, unknowns());
    factor_ = normal_matrix(rows, unknowns());
    if (!factor_in_place(factor_)) throw InputError("slab fit: the slab's normal matrix is not positive definite");
}

Eigen::MatrixXd SlabConsistency::residual(const Eigen::MatrixXd& b) const {
    // Columns are independent; a fixed number per task, so that each
    // column's sums run alike whatever the threads.
    constexpr int kColumns = 32;
    Eigen::MatrixXd r(b.rows(), b.cols());
    const int tasks = int((b.cols() + kColumns - 1) / kColumns);
    const auto l = factor_.triangularView<Eigen::Lower>();
#pragma omp parallel for schedule(dynamic, 1)
    for (int t = 0; t < tasks; ++t) {
        const int from = t * kColumns, count = std::min(kColumns, int(b.cols()) - from);
        Eigen::MatrixXd x = p_.transpose() * b.middleCols(from, count);
        l.solveInPlace(x);
        l.transpose().solveInPlace(x);
        r.middleCols(from, count) = b.middleCols(from, count) - p_ * x;
    }
    return r;
}

}  // namespace stackalign
