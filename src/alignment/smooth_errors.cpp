#include "smooth_errors.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "tilt_geometry.hpp"

namespace stackalign {
namespace {

constexpr double kPi = 3.14159265358979323846;

double t_max(const std::vector<double>& tilts_deg) {
    double m = 0;
    for (double t : tilts_deg) m = std::max(m, std::fabs(t));
    return m;
}

// Orthonormal columns spanning `b`'s, scaled to RMS 1 over the views.
Eigen::MatrixXd orthonormal(const Eigen::MatrixXd& b) {
    Eigen::HouseholderQR<Eigen::MatrixXd> qr(b);
    const Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(b.rows(), b.cols());
    return q * std::sqrt(double(b.rows()));
}

// The residual's sum of squares with every view moved by z sin t across,
// for each z: one residual over all of them, whose columns keep the
// threads busy where one depth's slices would not.
std::vector<double> at_depths(const SlabConsistency& slab, const ViewMoves& move, const std::vector<double>& tilts_deg,
                              const std::vector<double>& across, const std::vector<double>& zs) {
    std::vector<double> sets;
    for (double z : zs) {
        const std::vector<double> moved = depth_move(tilts_deg, z);
        for (std::size_t k = 0; k < moved.size(); ++k) sets.push_back(moved[k] + across[k]);
    }
    return residual_sums(slab, move, sets, int(zs.size()));
}

// The coefficients c that minimise |sum_j c_j e_j + r|, e_j the j-th
// `length` values of `effects` (k of them). By blocks of a fixed number of
// rows: each block's [e | -r] reduced to its triangle by Householder QR on
// the threads, the triangles stacked and solved by column-pivoting QR, the
// same least squares. One QR of the fit's whole 650,000 x 6 system took
// 0.08 s a step on one thread, a sixth of the stage's time on the GPU
// (121 x 512^2 slab, H200).
Eigen::VectorXd least_squares_by_blocks(const double* effects, const double* r, std::size_t length, int k) {
    constexpr std::size_t kBlockRows = 16384;
    const int blocks = int((length + kBlockRows - 1) / kBlockRows);
    Eigen::MatrixXd stacked = Eigen::MatrixXd::Zero(Eigen::Index(blocks) * (k + 1), k + 1);
#pragma omp parallel for schedule(dynamic, 1)
    for (int b = 0; b < blocks; ++b) {
        const std::size_t first = std::size_t(b) * kBlockRows, n = std::min(kBlockRows, length - first);
        Eigen::MatrixXd m(Eigen::Index(n), k + 1);
        for (int j = 0; j < k; ++j) m.col(j) = Eigen::Map<const Eigen::VectorXd>(effects + j * length + first, Eigen::Index(n));
        m.col(k) = -Eigen::Map<const Eigen::VectorXd>(r + first, Eigen::Index(n));
        const Eigen::HouseholderQR<Eigen::MatrixXd> qr(m);
        const Eigen::Index top = std::min<Eigen::Index>(Eigen::Index(n), k + 1);
        stacked.block(Eigen::Index(b) * (k + 1), 0, top, k + 1) =
            qr.matrixQR().topRows(top).triangularView<Eigen::Upper>();
    }
    return stacked.leftCols(k).colPivHouseholderQr().solve(stacked.col(k));
}

// The least of r over `values` (evenly spaced), refined by a parabola through it and its neighbours.
double least(const std::vector<double>& values, const std::vector<double>& r) {
    const int n = int(values.size());
    const int i = std::clamp(int(std::min_element(r.begin(), r.end()) - r.begin()), 1, n - 2);
    const double curve = r[i - 1] - 2 * r[i] + r[i + 1];
    const double step = values[1] - values[0];
    return values[i] + (curve > 0 ? 0.5 * (r[i - 1] - r[i + 1]) / curve * step : 0.0);
}

}  // namespace

std::vector<double> residual_sums(const SlabConsistency& slab, const ViewMoves& move, const std::vector<double>& across,
                                  int sets) {
    const std::size_t views = across.size() / std::size_t(std::max(sets, 1));
    const std::vector<double> along(views, 0.0);
    std::vector<double> sums;
    if (move.on_gpu.serve(slab)) {
        const auto write = [&](double* columns, void* stream) { move.on_gpu.write(across, sets, along, columns, stream); };
        const int group = move.on_gpu.set_columns;
        if (slab.sums_of_squares_on_gpu(write, group * sets, group, sums)) return sums;
    }
    Eigen::MatrixXd all;
    for (int i = 0; i < sets; ++i) {
        const std::vector<double> set(across.begin() + long(i * views), across.begin() + long((i + 1) * views));
        const Eigen::MatrixXd data = move(set, along, false).data;
        if (i == 0) all.resize(data.rows(), data.cols() * Eigen::Index(sets));
        // Column by column on the threads: a serial copy of the depth
        // scan's right-hand sides was a share of its time once the
        // factors were on the GPU.
#pragma omp parallel for schedule(static)
        for (Eigen::Index j = 0; j < data.cols(); ++j) all.col(Eigen::Index(i) * data.cols() + j) = data.col(j);
    }
    return slab.sums_of_squares(all, int(all.cols() / Eigen::Index(sets)));
}

std::vector<double> depth_move(const std::vector<double>& tilts_deg, double z) {
    std::vector<double> a(tilts_deg.size());
    for (std::size_t k = 0; k < tilts_deg.size(); ++k) a[k] = z * std::sin(tilts_deg[k] * kPi / 180);
    return a;
}

Eigen::MatrixXd across_error_shapes(const std::vector<double>& tilts_deg, int k, double free_beyond_deg) {
    const int n = int(tilts_deg.size());
    const double top = t_max(tilts_deg) * kPi / 180;
    std::vector<int> free_views;
    if (free_beyond_deg > 0)
        for (int v = 0; v < n; ++v)
            if (std::fabs(tilts_deg[v]) > free_beyond_deg) free_views.push_back(v);
    Eigen::MatrixXd b(n, k + int(free_views.size()));
    for (int j = 0; j < b.cols(); ++j) {
        std::vector<double> column(n, 0.0);
        for (int v = 0; v < n; ++v) {
            const double t = tilts_deg[v] * kPi / 180;
            if (j < k) column[v] = j == 0 ? std::tan(t) : std::pow(t / top, j + 1);
        }
        if (j >= k) column[std::size_t(free_views[std::size_t(j - k)])] = 1.0;
        const std::vector<double> rest = less_object_place(column, tilts_deg);
        for (int v = 0; v < n; ++v) b(v, j) = rest[v];
    }
    return orthonormal(b);
}

Eigen::MatrixXd along_error_shapes(const std::vector<double>& tilts_deg, int k) {
    const int n = int(tilts_deg.size());
    if (k == 0) return Eigen::MatrixXd(n, 0);
    const double top = t_max(tilts_deg) * kPi / 180;
    Eigen::MatrixXd b(n, k);
    for (int j = 0; j < k; ++j)
        for (int v = 0; v < n; ++v) b(v, j) = std::pow(tilts_deg[v] * kPi / 180 / top, j + 1);
    b.rowwise() -= b.colwise().mean();
    return orthonormal(b);
}

double depth_by_consistency(const SlabConsistency& slab, const ViewMoves& move, const std::vector<double>& tilts_deg,
                            const std::vector<double>& across, double span, std::optional<double> near) {
    const int reach = int(std::ceil(span));
    if (reach < 1) return 0.0;
    std::vector<double> coarse;
    std::vector<double> r;
    if (!near || reach < 3) {
        for (int z = -reach; z <= reach; ++z) coarse.push_back(z);
        r = at_depths(slab, move, tilts_deg, across, coarse);
    } else {
        // Two px either side of `near`, then outwards a px at a time while
        // the least lies on an end.
        const int middle = std::clamp(int(std::lround(*near)), -reach + 2, reach - 2);
        for (int z = middle - 2; z <= middle + 2; ++z) coarse.push_back(z);
        r = at_depths(slab, move, tilts_deg, across, coarse);
        for (;;) {
            const std::size_t lowest = std::size_t(std::min_element(r.begin(), r.end()) - r.begin());
            double next;
            if (lowest == 0 && coarse.front() > -reach)
                next = coarse.front() - 1;
            else if (lowest + 1 == r.size() && coarse.back() < reach)
                next = coarse.back() + 1;
            else
                break;
            const double value = at_depths(slab, move, tilts_deg, across, {next})[0];
            if (next < coarse.front())
                coarse.insert(coarse.begin(), next), r.insert(r.begin(), value);
            else
                coarse.push_back(next), r.push_back(value);
        }
    }
    const double z = least(coarse, r);
    std::vector<double> fine;
    for (int i = -4; i <= 4; ++i) fine.push_back(z + 0.25 * i);
    return least(fine, at_depths(slab, move, tilts_deg, across, fine));
}

int depth_knee(const std::vector<int>& depths, const std::vector<double>& residuals) {
    constexpr double kKnee = 1.05;
    // Past the knee the residual may fall at most to this share of it by
    // the deepest tried ...
    constexpr double kFlatTail = 0.3;
    // ... or, in its ratio's logarithm, at most this share of its fall from
    // the thinnest support to the knee. The thin slab of
    // tests/test_tilt_axis.cpp (a real frame foreshortened, 31 views) fell
    // 8.3 times to its knee at 48 px and 8.7 times more by 112 px, and a fit
    // at the knee took it from within 0.1 px to 1.52. Without noise the
    // residual falls by orders of magnitude to the knee and past it scatters
    // about the fit's own floor: the 512-px wide slab of the bench 380 times
    // to its knee at 96 px, less than 4 times past it (to 0.26), and the fit
    // took it from 0.586 px to 0.123 (`python3 bench/tilt_accuracy.py
    // --size 512 --noise 0 --cases slab-wide`).
    constexpr double kTailShareOfFall = 0.5;
    // ... and before the knee it must fall at least this many times to
    // show a depth. The bench's thick slabs fell 108-170 times to theirs at
    // 1000 photons a pixel and 28-58 at 100; content no deeper than the
    // thinnest support falls only as each deeper pixel adds freedom, and
    // the rules above then find a knee in that slow fall: 2.0 times to 48
    // px on the 8-px slab over +-70 degrees, 3.4 to 40 px on one layer. A
    // fit forced there took the 8-px slab from 0.025 px to 0.159, and in
    // the thinnest support to 0.021; noise flattens a thick slab's fall
    // too (the wide slab at 20 photons: 7.3 times, and the thinnest
    // support 0.320 -> 0.177 where the knee's left it as it was). `python3
    // bench/tilt_accuracy.py --views 71 --range 70 --cases slab-thin
    // slab-layer1 --noise 1000 --no-reference --variants defaults
    // 'fit=tilt_axis = "auto";slab_fit = true'`; `--cases slab-wide
    // --noise 20`.
    constexpr double kLeastFall = 10;
    const int n = int(depths.size()), from = n / 2;
    if (n < 3 || int(residuals.size()) != n) return kNoKnee;
    // The line through the deeper half's residuals.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int k = from; k < n; ++k) {
        sx += depths[k], sy += residuals[k], sxx += double(depths[k]) * depths[k], sxy += depths[k] * residuals[k];
    }
    const double m = n - from, slope = (m * sxy - sx * sy) / std::max(m * sxx - sx * sx, 1e-300), icpt = (sy - slope * sx) / m;
    int k = 0;
    while (k < n - 1 && residuals[k] > kKnee * (icpt + slope * depths[k])) ++k;
    if (k == n - 1) return kNoKnee;
    const double tiny = 1e-300;
    auto fall = [&](int from_k, int to_k) {
        return std::log(std::max(residuals[from_k], tiny) / std::max(residuals[to_k], tiny));
    };
    const bool flat_tail = residuals[n - 1] >= kFlatTail * residuals[k];
    const bool sharp_knee = fall(k, n - 1) <= kTailShareOfFall * fall(0, k);
    if (!flat_tail && !sharp_knee) return kNoKnee;
    return fall(0, k) >= std::log(kLeastFall) ? k : kNoFall;
}

SmoothErrorFit fit_smooth_errors(const SlabConsistency& slab, const ViewMoves& move,
                                 const std::vector<double>& tilts_deg, const std::vector<double>& across,
                                 const std::vector<double>& along, int shapes_across, int k_along, int steps,
                                 double free_beyond_deg) {
    const int n = int(tilts_deg.size());
    const Eigen::MatrixXd sa = across_error_shapes(tilts_deg, shapes_across, free_beyond_deg);
    const int k_across = int(sa.cols());
    const Eigen::MatrixXd sl = along_error_shapes(tilts_deg, k_along);
    const int k = k_across + k_along, width = slab.width();
    SmoothErrorFit out;
    out.across.assign(n, 0.0);
    out.along.assign(n, 0.0);
    out.coefficients = Eigen::VectorXd::Zero(k);
    auto corrections = [&](const std::vector<double>& base, const std::vector<double>& add) {
        std::vector<double> c = base;
        for (int v = 0; v < n; ++v) c[v] += add[v];
        return c;
    };
    MovedSlices m = move(across, along, true);
    Eigen::MatrixXd r = slab.residual(m.data);
    out.residual_before = out.residual_after = r.squaredNorm();
    for (int step = 0; step < steps; ++step) {
        // Each shape's effect on the residual, one solve for all of them.
        const int rows = int(m.data.cols()), cells = int(m.data.rows());
        Eigen::MatrixXd effects(cells, rows * k);
        for (int j = 0; j < k; ++j) {
            const bool is_across = j < k_across;
            const Eigen::MatrixXd& slope = is_across ? m.d_across : m.d_along;
            for (int v = 0; v < n; ++v) {
                const double w = is_across ? sa(v, j) : sl(v, j - k_across);
                effects.block(v * width, j * rows, width, rows) = w * slope.block(v * width, 0, width, rows);
            }
        }
        const Eigen::MatrixXd e = slab.residual(effects);
        const Eigen::VectorXd c = least_squares_by_blocks(e.data(), r.data(), std::size_t(rows) * cells, k);
        // The step, or a half or a quarter of it where the whole does not
        // lower the residual (a Gauss-Newton step from a linearisation of
        // moved, interpolated views can overshoot).
        bool lowered = false;
        for (double scale = 1; scale >= 0.25 && !lowered; scale /= 2) {
            std::vector<double> da(n, 0.0), dl(n, 0.0);
            for (int v = 0; v < n; ++v) {
                for (int j = 0; j < k_across; ++j) da[v] += sa(v, j) * c[j] * scale;
                for (int j = 0; j < k_along; ++j) dl[v] += sl(v, j) * c[k_across + j] * scale;
            }
            const std::vector<double> next_across = corrections(out.across, da), next_along = corrections(out.along, dl);
            MovedSlices next = move(corrections(across, next_across), corrections(along, next_along), step + 1 < steps);
            Eigen::MatrixXd next_r = slab.residual(next.data);
            if (next_r.squaredNorm() >= out.residual_after) continue;
            lowered = true;
            out.across = next_across;
            out.along = next_along;
            out.coefficients += scale * c;
            out.residual_after = next_r.squaredNorm();
            m = std::move(next);
            r = std::move(next_r);
        }
        if (!lowered) break;
    }
    return out;
}

}  // namespace stackalign
