// The CPU twin of normal_solve.hpp: a Cholesky factor by tiles, each tile
// updated by the same calls in the same order whatever the threads, so the
// factor and the solutions are the same bits on any machine's count.
#include <algorithm>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "normal_solve.hpp"

namespace stackalign::cpu {
namespace {

// The factor's and the solves' tile: 192 x 192 doubles stay in a core's
// L2 cache while a tile's products run.
constexpr int kTile = 192;
// Columns solved together: a fixed number, so that each column's sums run
// alike whatever the threads.
constexpr int kColumns = 32;

// R^T R, its lower triangle (what the factor reads). Each thread owns a
// band of the matrix's rows and visits every row of R, so the sums run in
// R's order whatever the threads.
Eigen::MatrixXd normal_matrix(const SparseRows& rows, int cells) {
    Eigen::MatrixXd n = Eigen::MatrixXd::Zero(cells, cells);
#pragma omp parallel
    {
        int threads = 1, me = 0;
#ifdef _OPENMP
        threads = omp_get_num_threads();
        me = omp_get_thread_num();
#endif
        const int from = int((long long)cells * me / threads), to = int((long long)cells * (me + 1) / threads);
        for (const auto& r : rows)
            for (std::size_t a = 0; a < r.size(); ++a) {
                if (r[a].first < from || r[a].first >= to) continue;
                for (std::size_t b = 0; b <= a; ++b) n(r[a].first, r[b].first) += r[a].second * r[b].second;
            }
    }
    return n;
}

// Cholesky factor of `a`'s lower triangle in place, by tiles: Eigen's
// dense LLT runs on one thread, and the slab's normal matrices (thousands
// of unknowns, a factor per depth tried) took most of the stage's time.
// False where `a` is not positive definite.
bool factor_in_place(Eigen::MatrixXd& a) {
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

// x <- (L L^T)^-1 x for the lower factor `l`, by tiles of rows and groups
// of columns: solving whole columns, a group to a thread, would leave all
// but two threads idle on the fit's 43-column residuals, so each tile's
// update is a task of its own.
void solve_with_factor(const Eigen::MatrixXd& l, Eigen::MatrixXd& x) {
    const int n = int(l.rows()), tiles = (n + kTile - 1) / kTile, width = int(x.cols());
    const int groups = (width + kColumns - 1) / kColumns;
    auto size = [](int first, int step, int end) { return std::min(step, end - first); };
    auto diagonal_solves = [&](int i, bool transposed) {
        const int r = i * kTile, rb = size(r, kTile, n);
        const auto d = l.block(r, r, rb, rb).triangularView<Eigen::Lower>();
#pragma omp parallel for schedule(dynamic, 1)
        for (int g = 0; g < groups; ++g) {
            auto part = x.block(r, g * kColumns, rb, size(g * kColumns, kColumns, width));
            if (transposed)
                d.transpose().solveInPlace(part);
            else
                d.solveInPlace(part);
        }
    };
    // L y = x: a tile row at a time, then its product off every later tile.
    for (int i = 0; i < tiles; ++i) {
        diagonal_solves(i, false);
        const int r = i * kTile, rb = size(r, kTile, n);
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
        for (int k = i + 1; k < tiles; ++k)
            for (int g = 0; g < groups; ++g) {
                const int q = k * kTile, qb = size(q, kTile, n), c = g * kColumns, cb = size(c, kColumns, width);
                x.block(q, c, qb, cb).noalias() -= l.block(q, r, qb, rb) * x.block(r, c, rb, cb);
            }
    }
    // L^T x = y: from the last tile row back.
    for (int i = tiles - 1; i >= 0; --i) {
        diagonal_solves(i, true);
        const int r = i * kTile, rb = size(r, kTile, n);
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
        for (int k = 0; k < i; ++k)
            for (int g = 0; g < groups; ++g) {
                const int q = k * kTile, qb = size(q, kTile, n), c = g * kColumns, cb = size(c, kColumns, width);
                x.block(q, c, qb, cb).noalias() -= l.block(r, q, rb, qb).transpose() * x.block(r, c, rb, cb);
            }
    }
}

class CpuNormalSolver final : public NormalSolver {
public:
    explicit CpuNormalSolver(Eigen::MatrixXd factor) : l_(std::move(factor)) {}
    void solve_in_place(Eigen::MatrixXd& x) const override { solve_with_factor(l_, x); }

private:
    Eigen::MatrixXd l_;
};

}  // namespace

std::unique_ptr<NormalSolver> factor_normal(const SparseRows& r, int columns, double weight) {
    Eigen::MatrixXd a = normal_matrix(r, columns);
    a.diagonal().array() += weight;
    if (!factor_in_place(a)) return nullptr;
    return std::make_unique<CpuNormalSolver>(std::move(a));
}

}  // namespace stackalign::cpu
