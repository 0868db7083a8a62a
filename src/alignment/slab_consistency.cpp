#include "slab_consistency.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "../core/error.hpp"

namespace stackalign {
namespace {

// Along each ray, px between samples at most. At a quarter pixel the fit's
// answer hung on where the samples fell: the wide slab at 512 px came out
// 0.109, 0.127 or 0.136 px from the truth with samples from the ray's
// entry, spread evenly or centred on its middle (0.082, 0.129, 0.082 at
// 256 px); at a sixteenth, spread evenly, 0.108 (0.082), and every other
// slab within 0.002 px of the first or better (`python3
// bench/tilt_accuracy.py --size 512 --noise 1000 --no-reference --backends
// cuda --cases slab-wide --variants defaults`, H200).
constexpr double kRayStep = 0.0625;
// Tikhonov weight, of the normal matrix's mean diagonal: cells the rays
// barely reach stay bounded, and the fit's residual is otherwise that of
// the exact solution (`python3 bench/consistency_fit.py --lam`).
constexpr double kLambda = 1e-3;

constexpr double kPi = 3.14159265358979323846;

using Row = SparseRows::value_type;  // (cell, weight), cells ascending

// `row` sorted by cell, each cell's weights summed.
Row merged(Row row) {
    std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Row out;
    for (const auto& e : row) {
        if (!out.empty() && out.back().first == e.first)
            out.back().second += e.second;
        else
            out.push_back(e);
    }
    return out;
}

// One detector pixel's ray through the slab: each sample bilinear in the
// support's cells (cell = z * support + x), summed per cell in `scratch`
// (cells long, zero, and left so). The samples run evenly from where the
// ray enters the slab's outer cells to where it leaves, so that the pixel
// at -u sees the support turned half a circle: the symmetry that splits
// the normal matrix in two (SlabConsistency).
Row ray_row(double u, double c, double s, int depth, int support, std::vector<double>& scratch) {
    const double cx = (support - 1) / 2.0, cz = (depth - 1) / 2.0;
    const double span = 2 * (cz + 1) / std::fabs(c), from = -u * (s / c) - span / 2;
    const int steps = std::max(1, int(std::ceil(span / kRayStep - 1e-9)));
    const double step = span / steps;
    std::vector<int> touched;
    for (int k = 0; k <= steps; ++k) {
        const double ray = from + span * k / steps;
        const double x = u * c - ray * s + cx, z = u * s + ray * c + cz;
        const double fx0 = std::floor(x), fz0 = std::floor(z);
        const int ix = int(fx0), iz = int(fz0);
        const double fx = x - fx0, fz = z - fz0;
        for (int dz = 0; dz < 2; ++dz)
            for (int dx = 0; dx < 2; ++dx) {
                const int jx = ix + dx, jz = iz + dz;
                if (jx < 0 || jx >= support || jz < 0 || jz >= depth) continue;
                const double w = (dz ? fz : 1 - fz) * (dx ? fx : 1 - fx) * step;
                if (w == 0) continue;
                const int cell = jz * support + jx;
                if (scratch[std::size_t(cell)] == 0) touched.push_back(cell);
                scratch[std::size_t(cell)] += w;
            }
    }
    std::sort(touched.begin(), touched.end());
    Row row;
    for (int cell : touched) row.emplace_back(cell, scratch[std::size_t(cell)]), scratch[std::size_t(cell)] = 0;
    return row;
}

// The ray's row in the even (`sign` 1) or odd (-1) half of the cells'
// basis: cell c and its turned twin N - 1 - c make (e_c +- e_twin) / sqrt 2
// at index c, and a cell that is its own twin is even.
Row folded(const Row& row, int cells, int sign) {
    const int half = cells / 2;
    const double r = std::sqrt(0.5);
    Row out;
    for (const auto& [c, w] : row) {
        if (c < half)
            out.emplace_back(c, w * r);
        else if (cells - 1 - c < half)
            out.emplace_back(cells - 1 - c, sign * w * r);
        else if (sign > 0)
            out.emplace_back(half, w);
    }
    return merged(std::move(out));
}

std::vector<Row> projector_rows(int width, int depth, int support, const std::vector<double>& tilts_deg) {
    std::vector<Row> rows(tilts_deg.size() * std::size_t(width));
#pragma omp parallel
    {
        std::vector<double> scratch(std::size_t(depth) * support, 0.0);
#pragma omp for schedule(static)
        for (long long i = 0; i < (long long)rows.size(); ++i) {
            const double t = tilts_deg[std::size_t(i / width)] * kPi / 180;
            const double u = double(i % width) - (width - 1) / 2.0;
            rows[std::size_t(i)] = ray_row(u, std::cos(t), std::sin(t), depth, support, scratch);
        }
    }
    return rows;
}

Eigen::SparseMatrix<double, Eigen::RowMajor> as_matrix(const std::vector<Row>& rows, int cells) {
    // The rows are sorted and merged already: compressed as they are (on
    // the threads; triplets took a serial sort of every entry).
    const CompressedSparseRows c = compressed(rows);
    return Eigen::Map<const Eigen::SparseMatrix<double, Eigen::RowMajor>>(
        int(rows.size()), cells, c.start.back(), c.start.data(), c.column.data(), c.value.data());
}

// a * x, each row's sum in the row's own order (so whatever the threads),
// eight columns at a pass: Eigen's product walks the sparse rows once per
// column, and with the depth scan's hundreds of columns that walk took a
// seventh of the stage (perf, the bench's 256-px slab).
Eigen::MatrixXd product(const Eigen::SparseMatrix<double, Eigen::RowMajor>& a, const Eigen::MatrixXd& x) {
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
    const int* start = a.outerIndexPtr();
    const int* index = a.innerIndexPtr();
    const double* value = a.valuePtr();
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

}  // namespace

int slab_support(int width, int depth, const std::vector<double>& tilts_deg) {
    double t_max = 0;
    for (double t : tilts_deg) t_max = std::max(t_max, std::fabs(t) * kPi / 180);
    return int(std::ceil(width / std::cos(t_max) + depth * std::tan(t_max))) + 2;
}

SlabConsistency::SlabConsistency(int width, int depth, const std::vector<double>& tilts_deg,
                                 const FactorNormal& factor)
    : width_(width), depth_(depth), support_(slab_support(width, depth, tilts_deg)), views_(int(tilts_deg.size())) {
    if (width < 2 || depth < 1 || views_ < 2)
        throw InputError("slab fit: too small a slab (" + std::to_string(width) + " px across, " + std::to_string(depth) +
                         " deep, " + std::to_string(views_) + " views)");
    const int cells = unknowns(), half = cells / 2;
    const std::vector<Row> rows = projector_rows(width, depth, support_, tilts_deg);
    p_ = as_matrix(rows, cells);
    pt_ = p_.transpose();
    // Turning the support half a circle turns every view's rays into the
    // same view's, mirrored across its centre, so P^T P keeps the cells'
    // even and odd halves apart: two factors of half the size (an eighth
    // of the work each) and solves of half the work, the same answer.
    SparseRows even(rows.size()), odd(rows.size());
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < (long long)rows.size(); ++i) {
        even[std::size_t(i)] = folded(rows[std::size_t(i)], cells, 1);
        odd[std::size_t(i)] = folded(rows[std::size_t(i)], cells, -1);
    }
    // Tikhonov weight: of P^T P's mean diagonal, which the turn keeps.
    const double weight = kLambda * (normal_trace(even, cells - half) + normal_trace(odd, half)) / cells;
    even_ = factor(even, cells - half, weight);
    odd_ = factor(odd, half, weight);
    if (!even_ || !odd_) throw InputError("slab fit: the slab's normal matrix is not positive definite");
}

Eigen::MatrixXd SlabConsistency::residual(const Eigen::MatrixXd& b) const {
    const Eigen::MatrixXd c = product(pt_, b);
    const int cells = unknowns(), half = cells / 2, middle = cells - 2 * half;  // middle: the cell its own twin
    const double r = std::sqrt(0.5);
    const long long columns = b.cols();
    // Cell i's twin is cells - 1 - i: the bottom rows upside down. Column
    // by column on the threads (element by element, the same sums).
    Eigen::MatrixXd even(cells - half, columns), odd(half, columns);
#pragma omp parallel for schedule(static)
    for (long long j = 0; j < columns; ++j) {
        even.col(j).head(half) = (c.col(j).head(half) + c.col(j).tail(half).reverse()) * r;
        odd.col(j) = (c.col(j).head(half) - c.col(j).tail(half).reverse()) * r;
        even.col(j).tail(middle) = c.col(j).segment(half, middle);
    }
    even_->solve_in_place(even);
    odd_->solve_in_place(odd);
    Eigen::MatrixXd x(cells, columns);
#pragma omp parallel for schedule(static)
    for (long long j = 0; j < columns; ++j) {
        x.col(j).head(half) = (even.col(j).head(half) + odd.col(j)) * r;
        x.col(j).tail(half) = ((even.col(j).head(half) - odd.col(j)) * r).reverse();
        x.col(j).segment(half, middle) = even.col(j).tail(middle);
    }
    Eigen::MatrixXd residual = product(p_, x);
#pragma omp parallel for schedule(static)
    for (long long j = 0; j < columns; ++j) residual.col(j) = b.col(j) - residual.col(j);
    return residual;
}

}  // namespace stackalign
