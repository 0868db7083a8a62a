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

// Scratch for one thread's rays: a sum per cell (zero, and left so) and
// the cells touched.
struct RayScratch {
    std::vector<double> sum;
    std::vector<int> touched;
};

// Rows 0 .. n - 1 of a matrix `columns` wide, each appended to (column,
// value) by `append(i, column, value)`, columns ascending, where `append`
// is `make_append()`'s (one a thread, with its own scratch): each thread
// a block of rows, the blocks joined in order (the same matrix whatever
// the threads).
template <typename MakeAppend>
CompressedSparseRows built_rows(int n, int columns, const MakeAppend& make_append) {
    int blocks = 1;
#ifdef _OPENMP
    blocks = std::max(1, std::min(omp_get_max_threads(), n));
#endif
    auto first_row = [&](int b) { return int((long long)n * b / blocks); };
    std::vector<CompressedSparseRows> part(static_cast<std::size_t>(blocks));
#pragma omp parallel for schedule(static)
    for (int b = 0; b < blocks; ++b) {
        auto append = make_append();
        CompressedSparseRows& p = part[std::size_t(b)];
        for (int i = first_row(b); i < first_row(b + 1); ++i) {
            append(i, p.column, p.value);
            p.start.push_back(int(p.column.size()));
        }
    }
    CompressedSparseRows out;
    out.columns = columns;
    out.start.assign(std::size_t(n) + 1, 0);
    std::vector<std::size_t> at(std::size_t(blocks) + 1, 0);
    for (int b = 0; b < blocks; ++b) at[std::size_t(b) + 1] = at[std::size_t(b)] + part[std::size_t(b)].column.size();
    out.column.resize(at.back());
    out.value.resize(at.back());
#pragma omp parallel for schedule(static)
    for (int b = 0; b < blocks; ++b) {
        const CompressedSparseRows& p = part[std::size_t(b)];
        const int offset = int(at[std::size_t(b)]);
        for (int k = 1; k < int(p.start.size()); ++k) out.start[std::size_t(first_row(b) + k)] = p.start[std::size_t(k)] + offset;
        std::copy(p.column.begin(), p.column.end(), out.column.begin() + long(offset));
        std::copy(p.value.begin(), p.value.end(), out.value.begin() + long(offset));
    }
    return out;
}

// One detector pixel's ray through the slab: each sample bilinear in the
// support's cells (cell = z * support + x), summed per cell. The samples
// run evenly from where the ray enters the slab's outer cells to where it
// leaves, so that the pixel at -u sees the support turned half a circle:
// the symmetry that splits the normal matrix in two (SlabConsistency).
void ray_row(double u, double c, double s, int depth, int support, RayScratch& scratch, std::vector<int>& column,
             std::vector<double>& value) {
    const double cx = (support - 1) / 2.0, cz = (depth - 1) / 2.0;
    const double span = 2 * (cz + 1) / std::fabs(c), from = -u * (s / c) - span / 2;
    const int steps = std::max(1, int(std::ceil(span / kRayStep - 1e-9)));
    const double step = span / steps;
    std::vector<int>& touched = scratch.touched;
    touched.clear();
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
                if (scratch.sum[std::size_t(cell)] == 0) touched.push_back(cell);
                scratch.sum[std::size_t(cell)] += w;
            }
    }
    std::sort(touched.begin(), touched.end());
    for (int cell : touched) {
        column.push_back(cell);
        value.push_back(scratch.sum[std::size_t(cell)]);
        scratch.sum[std::size_t(cell)] = 0;
    }
}

// P's row `i` in the even (`sign` 1) or odd (-1) half's basis: cell c and
// its turned twin N - 1 - c make (e_c +- e_twin) / sqrt 2 at index c, and a
// cell that is its own twin is even (index half, the last). The row's cells
// ascend, so its first half's ascend and its twins' ascend read backwards:
// merged as they come.
void folded_row(const CompressedSparseRows& p, int i, int sign, std::vector<int>& column, std::vector<double>& value) {
    const int cells = p.columns, half = cells / 2;
    const double r = std::sqrt(0.5);
    int a = p.start[std::size_t(i)], end = p.start[std::size_t(i) + 1], b = end - 1;
    const int head_end = int(std::lower_bound(p.column.begin() + a, p.column.begin() + end, half) - p.column.begin());
    const int tail_begin =
        int(std::lower_bound(p.column.begin() + a, p.column.begin() + end, cells - half) - p.column.begin());
    for (;;) {
        const int ca = a < head_end ? p.column[std::size_t(a)] : cells;
        const int cb = b >= tail_begin ? cells - 1 - p.column[std::size_t(b)] : cells;
        if (ca == cells && cb == cells) break;
        if (ca <= cb) {
            double w = p.value[std::size_t(a)] * r;
            if (ca == cb) w += sign * p.value[std::size_t(b--)] * r;
            column.push_back(ca), value.push_back(w), ++a;
        } else {
            column.push_back(cb), value.push_back(sign * p.value[std::size_t(b--)] * r);
        }
    }
    if (sign > 0 && cells % 2 && head_end < tail_begin) column.push_back(half), value.push_back(p.value[std::size_t(head_end)]);
}

}  // namespace

int slab_support(int width, int depth, const std::vector<double>& tilts_deg) {
    double t_max = 0;
    for (double t : tilts_deg) t_max = std::max(t_max, std::fabs(t) * kPi / 180);
    return int(std::ceil(width / std::cos(t_max) + depth * std::tan(t_max))) + 2;
}

SlabConsistency::SlabConsistency(int width, int depth, const std::vector<double>& tilts_deg,
                                 const FactorLeastSquares& factor)
    : width_(width), depth_(depth), support_(slab_support(width, depth, tilts_deg)), views_(int(tilts_deg.size())) {
    if (width < 2 || depth < 1 || views_ < 2)
        throw InputError("slab fit: too small a slab (" + std::to_string(width) + " px across, " + std::to_string(depth) +
                         " deep, " + std::to_string(views_) + " views)");
    const int cells = unknowns(), half = cells / 2, rows = views_ * width;
    MirroredLeastSquares s;
    p_ = std::make_shared<const CompressedSparseRows>(built_rows(rows, cells, [&] {
        return [&, scratch = RayScratch{std::vector<double>(std::size_t(cells), 0.0), {}}](
                   int i, auto& column, auto& value) mutable {
            const double t = tilts_deg[std::size_t(i / width)] * kPi / 180;
            const double u = double(i % width) - (width - 1) / 2.0;
            ray_row(u, std::cos(t), std::sin(t), depth, support_, scratch, column, value);
        };
    }));
    s.p = p_;
    s.pt = std::make_shared<const CompressedSparseRows>(transposed(*p_));
    // Turning the support half a circle turns every view's rays into the
    // same view's, mirrored across its centre, so P^T P keeps the cells'
    // even and odd halves apart: two factors of half the size (an eighth
    // of the work each) and solves of half the work, the same answer.
    s.even = built_rows(rows, cells - half, [&] {
        return [&](int i, auto& column, auto& value) { folded_row(*p_, i, 1, column, value); };
    });
    s.odd = built_rows(rows, half, [&] {
        return [&](int i, auto& column, auto& value) { folded_row(*p_, i, -1, column, value); };
    });
    // Tikhonov weight: of P^T P's mean diagonal, which the turn keeps.
    s.weight = kLambda * (normal_trace(s.even) + normal_trace(s.odd)) / cells;
    residual_ = factor(s);
    if (!residual_) throw InputError("slab fit: the slab's normal matrix is not positive definite");
}

Eigen::SparseMatrix<double, Eigen::RowMajor> SlabConsistency::projector() const {
    const CompressedSparseRows& p = *p_;
    return Eigen::Map<const Eigen::SparseMatrix<double, Eigen::RowMajor>>(p.rows(), p.columns, int(p.value.size()),
                                                                         p.start.data(), p.column.data(), p.value.data());
}

std::vector<double> SlabConsistency::sums_of_squares(const Eigen::MatrixXd& b, int group) const {
    return residual_->sums_of_squares(b, group);
}

Eigen::MatrixXd SlabConsistency::residual(const Eigen::MatrixXd& b) const { return residual_->residual(b); }

}  // namespace stackalign
