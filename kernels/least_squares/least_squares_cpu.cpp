// The CPU twin of least_squares.hpp: Cholesky factors by tiles, each tile
// updated by the same calls in the same order whatever the threads, and
// products that sum each row in its own order, so the residual is the same
// bits on any machine's count.
#include <algorithm>
#include <cmath>
#include <optional>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "least_squares.hpp"

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
Eigen::MatrixXd normal_matrix(const CompressedSparseRows& r) {
    const int cells = r.columns;
    Eigen::MatrixXd n = Eigen::MatrixXd::Zero(cells, cells);
#pragma omp parallel
    {
        int threads = 1, me = 0;
#ifdef _OPENMP
        threads = omp_get_num_threads();
        me = omp_get_thread_num();
#endif
        const int from = int((long long)cells * me / threads), to = int((long long)cells * (me + 1) / threads);
        for (int i = 0; i < r.rows(); ++i)
            for (int a = r.start[std::size_t(i)]; a < r.start[std::size_t(i) + 1]; ++a) {
                const int ca = r.column[std::size_t(a)];
                if (ca < from || ca >= to) continue;
                for (int b = r.start[std::size_t(i)]; b <= a; ++b)
                    n(ca, r.column[std::size_t(b)]) += r.value[std::size_t(a)] * r.value[std::size_t(b)];
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

// a * x, each row's sum in the row's own order (so whatever the threads),
// eight columns at a pass: Eigen's product walks the sparse rows once per
// column, and with the depth scan's hundreds of columns that walk took a
// seventh of the stage (perf, the bench's 256-px slab).
Eigen::MatrixXd product(const CompressedSparseRows& a, const Eigen::MatrixXd& x) {
    constexpr int kPass = 8;
    const int cols = int(x.cols()), padded = (cols + kPass - 1) / kPass * kPass;
    // Row-major and zero-padded to whole passes, so that every pass is a
    // fixed count the compiler vectorises; the padding's sums are dropped.
    // Copied by the threads too: with the GPU's factor, the copies of the
    // depth scan's 25-MB right-hand sides on one thread were most of a
    // residual's time (`build/bench slab`).
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows(x.rows(), padded);
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < (long long)x.rows(); ++i) {
        for (int c = 0; c < cols; ++c) rows(i, c) = x(i, c);
        for (int c = cols; c < padded; ++c) rows(i, c) = 0;
    }
    Eigen::MatrixXd out(a.rows(), cols);
    const int* start = a.start.data();
    const int* index = a.column.data();
    const double* value = a.value.data();
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < (long long)a.rows(); ++i)
        for (int c = 0; c < cols; c += kPass) {
            double sum[kPass] = {};
            for (int e = start[i]; e < start[i + 1]; ++e) {
                const double w = value[e], *from = rows.data() + std::size_t(index[e]) * padded + c;
                for (int q = 0; q < kPass; ++q) sum[q] += w * from[q];
            }
            for (int q = 0; q < std::min(kPass, cols - c); ++q) out(i, c + q) = sum[q];
        }
    return out;
}

std::optional<Eigen::MatrixXd> factor(const CompressedSparseRows& r, double weight) {
    Eigen::MatrixXd a = normal_matrix(r);
    a.diagonal().array() += weight;
    if (!factor_in_place(a)) return std::nullopt;
    return a;
}

class CpuLeastSquares final : public LeastSquaresResidual {
public:
    CpuLeastSquares(const MirroredLeastSquares& s, Eigen::MatrixXd even, Eigen::MatrixXd odd)
        : LeastSquaresResidual(s.p->rows()), p_(s.p), pt_(s.pt), even_(std::move(even)), odd_(std::move(odd)) {}

private:
    // The cuda twin's kernels (least_squares_cuda.cu) make the same sums
    // of the same terms: keep them alike.
    Eigen::MatrixXd residual_of(const Eigen::MatrixXd& b) const override {
        const Eigen::MatrixXd c = product(*pt_, b);
        const int cells = p_->columns, half = cells / 2, middle = cells - 2 * half;  // middle: the cell its own twin
        const double r = std::sqrt(0.5);
        const long long columns = b.cols();
        // Cell i's twin is cells - 1 - i: the bottom rows upside down.
        // Column by column on the threads (element by element, the same sums).
        Eigen::MatrixXd even(cells - half, columns), odd(half, columns);
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < columns; ++j) {
            even.col(j).head(half) = (c.col(j).head(half) + c.col(j).tail(half).reverse()) * r;
            odd.col(j) = (c.col(j).head(half) - c.col(j).tail(half).reverse()) * r;
            even.col(j).tail(middle) = c.col(j).segment(half, middle);
        }
        solve_with_factor(even_, even);
        solve_with_factor(odd_, odd);
        Eigen::MatrixXd x(cells, columns);
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < columns; ++j) {
            x.col(j).head(half) = (even.col(j).head(half) + odd.col(j)) * r;
            x.col(j).tail(half) = ((even.col(j).head(half) - odd.col(j)) * r).reverse();
            x.col(j).segment(half, middle) = even.col(j).tail(middle);
        }
        Eigen::MatrixXd residual = product(*p_, x);
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < columns; ++j) residual.col(j) = b.col(j) - residual.col(j);
        return residual;
    }

    std::vector<double> sums_of_squares_of(const Eigen::MatrixXd& b, int group) const override {
        const Eigen::MatrixXd r = residual_of(b);
        std::vector<double> sums;
        for (Eigen::Index first = 0; first < r.cols(); first += group) sums.push_back(r.middleCols(first, group).squaredNorm());
        return sums;
    }

    std::shared_ptr<const CompressedSparseRows> p_, pt_;
    Eigen::MatrixXd even_, odd_;  // the halves' lower factors
};

}  // namespace

std::unique_ptr<LeastSquaresResidual> factor_least_squares(const MirroredLeastSquares& system) {
    std::optional<Eigen::MatrixXd> even = factor(system.even, system.weight);
    if (!even) return nullptr;
    std::optional<Eigen::MatrixXd> odd = factor(system.odd, system.weight);
    if (!odd) return nullptr;
    return std::make_unique<CpuLeastSquares>(system, std::move(*even), std::move(*odd));
}

}  // namespace stackalign::cpu
