// The refinement's search, shared by both backends: scores from a pair's
// statistics (a Parzen histogram or NCC's moments), and the three levels of
// 3 x 3 (x 3) stencils, each moved to the maximum of the quadric fitted to
// its scores (refine_continuous).
#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <optional>

#include "pair_moments.hpp"
#include "refine.hpp"

namespace stackalign {
double parzen_score(const std::uint64_t* h, int bins, Metric metric) {
    std::vector<double> row(bins, 0.0), col(bins, 0.0);
    double n = 0;
    for (int a = 0; a < bins; ++a)
        for (int b = 0; b < bins; ++b) {
            const double c = double(h[a * bins + b]);
            row[a] += c;
            col[b] += c;
            n += c;
        }
    if (n <= 0) return metric == Metric::nmi ? 1.0 : 0.0;
    auto plogp = [n](double c) { return c > 0 ? c / n * std::log(c / n) : 0.0; };
    if (metric == Metric::mi || metric == Metric::nmi) {
        double ha = 0, hb = 0, hab = 0;
        for (int i = 0; i < bins; ++i) ha -= plogp(row[i]), hb -= plogp(col[i]);
        for (int k = 0; k < bins * bins; ++k) hab -= plogp(double(h[k]));
        if (metric == Metric::mi) return ha + hb - hab;
        return hab > 1e-12 ? (ha + hb) / hab : 1.0;
    }
    if (metric == Metric::ncc) {
        double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
        for (int a = 0; a < bins; ++a)
            for (int b = 0; b < bins; ++b) {
                const double c = double(h[a * bins + b]) / n;
                sa += a * c, sb += b * c, saa += double(a) * a * c, sbb += double(b) * b * c, sab += double(a) * b * c;
            }
        const double va = saa - sa * sa, vb = sbb - sb * sb;
        return va > 0 && vb > 0 ? (sab - sa * sb) / std::sqrt(va * vb) : 0.0;
    }
    // Correlation ratio of the moving values given the reference bin.
    double within = 0, s = 0, q = 0;
    for (int a = 0; a < bins; ++a) {
        double na = 0, sa = 0, qa = 0;
        for (int b = 0; b < bins; ++b) {
            const double c = double(h[a * bins + b]);
            na += c, sa += b * c, qa += double(b) * b * c;
        }
        if (na > 0) within += qa - sa * sa / na;
        s += sa, q += qa;
    }
    const double total = q - s * s / n;
    return total > 1e-9 * (q + 1.0) ? 1.0 - within / total : 0.0;
}

namespace {

// The quadric through a 3 x 3 (x 3) stencil of scores, least squares, in
// units of the stencil's spacing: its maximum's offset from the centre, or
// nothing where the fit is not a maximum (flat, a saddle, a valley).
//
// On a 3^d factorial stencil the fit's terms are orthogonal, so each
// coefficient is one weighted sum of the scores: the slope along an axis
// from its two outer planes, the curvature from those planes against the
// middle one, a cross term from the four corners of its plane.
std::optional<Eigen::Vector3d> quadric_peak(const std::vector<double>& values, const std::vector<std::array<int, 3>>& at,
                                            int dims) {
    const double planes = std::pow(3.0, dims - 1);  // points per plane across one axis
    Eigen::Vector3d g = Eigen::Vector3d::Zero();
    Eigen::Matrix3d h = Eigen::Matrix3d::Zero();
    for (std::size_t k = 0; k < values.size(); ++k) {
        const double v = values[k];
        if (!std::isfinite(v)) return std::nullopt;
        for (int a = 0; a < dims; ++a) {
            const int xa = at[k][a];
            g[a] += v * xa / (2 * planes);
            // f ~ ... + q x^2 with x^2 centred (x^2 - 2/3): sum of squares 2/3 per plane point
            h(a, a) += 2 * v * (xa * xa - 2.0 / 3.0) / (planes * 2.0 / 3.0);
            for (int b = a + 1; b < dims; ++b) h(a, b) += v * xa * at[k][b] / (4 * planes / 3);
        }
    }
    for (int a = 0; a < dims; ++a)
        for (int b = a + 1; b < dims; ++b) h(b, a) = h(a, b);
    // A maximum: -H positive definite.
    const Eigen::LLT<Eigen::MatrixXd> llt(-h.topLeftCorner(dims, dims));
    if (llt.info() != Eigen::Success) return std::nullopt;
    Eigen::Vector3d x = Eigen::Vector3d::Zero();
    x.head(dims) = llt.solve(g.head(dims));
    return x;
}

}  // namespace

ContinuousShift refine_continuous(const ShiftScorer& score, const ContinuousShift& start, int dims) {
    ContinuousShift best = start;
    std::vector<double> values;
    std::vector<ContinuousShift> grid;
    std::vector<std::array<int, 3>> offsets;
    for (const RefineLevel& level : kRefineLevels) {
        const int hz = dims > 2 ? 1 : 0;
        grid.clear();
        offsets.clear();
        for (int k = -hz; k <= hz; ++k)
            for (int j = -1; j <= 1; ++j)
                for (int i = -1; i <= 1; ++i) {
                    offsets.push_back({i, j, k});
                    grid.push_back({best.x + level.spacing * i, best.y + level.spacing * j, best.z + level.spacing * k});
                }
        values = score(grid);
        // The quadric's maximum, no farther than `reach` spacings per axis;
        // where the scores form no maximum, the best point of the stencil
        // (on ties the one nearest the centre, then the first).
        if (const auto peak = quadric_peak(values, offsets, dims)) {
            const auto step = [&](double v) { return level.spacing * std::clamp(v, -level.reach, level.reach); };
            best = {best.x + step((*peak)[0]), best.y + step((*peak)[1]), dims > 2 ? best.z + step((*peak)[2]) : best.z};
            continue;
        }
        int best_index = 0;
        for (int g = 1; g < int(grid.size()); ++g) {
            const auto& o = offsets[g];
            const auto& b = offsets[best_index];
            const int dist = std::abs(o[0]) + std::abs(o[1]) + std::abs(o[2]), best_dist = std::abs(b[0]) + std::abs(b[1]) + std::abs(b[2]);
            if (values[g] > values[best_index] || (values[g] == values[best_index] && dist < best_dist)) best_index = g;
        }
        best = grid[best_index];
    }
    return best;
}

int refine_evaluations(int dims) { return int(std::size(kRefineLevels)) * (dims > 2 ? 27 : 9); }

std::size_t statistics_size(const RefineParams& p) {
    return p.metric == Metric::ncc ? std::size_t(kMomentCount) : std::size_t(p.bins) * p.bins;
}

std::vector<double> refine_scores(const std::vector<std::uint64_t>& statistics, const RefineParams& p) {
    const std::size_t size = statistics_size(p);
    std::vector<double> scores(statistics.size() / size);
    // A Parzen score is 32^2 logarithms: a batch's 13-25, one after another,
    // took longer than the GPU took to make their histograms.
#pragma omp parallel for schedule(static) if (p.metric != Metric::ncc)
    for (long long i = 0; i < (long long)(scores.size()); ++i) {
        const std::uint64_t* s = statistics.data() + std::size_t(i) * size;
        scores[i] = p.metric == Metric::ncc ? p.ncc_sign * ncc_of_moments(s) : parzen_score(s, p.bins, p.metric);
    }
    return scores;
}

ContinuousShift refine_pair(const RefineParams& p, const StatisticsMaker& statistics, const ContinuousShift& start,
                            int dims) {
    return refine_continuous([&](const std::vector<ContinuousShift>& shifts) { return refine_scores(statistics(shifts), p); },
                             start, dims);
}

}  // namespace stackalign
