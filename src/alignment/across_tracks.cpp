#include "across_tracks.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "../core/error.hpp"
#include "../core/median.hpp"
#include "jackknife.hpp"
#include "robust_weights.hpp"
#include "tilt_geometry.hpp"
#include "track_segments.hpp"

namespace stackalign {
namespace {

// Degrees of tilt a segment's point is held over. A patch of layered
// content follows one point only while its layers slide little past each
// other, which is a matter of the angle turned, not of how many views
// sample it. Set on the bench's 1-degree series: with the corrections
// always taken off, 10 / 20 / 40 views gave 0.046 / 0.035 / 0.032 px on the
// slab of two layers 38 px apart and 0.124 / 0.119 / 0.159 on the
// zebrafish slab, where the rule leaves them out (axis_by_tracks.cpp;
// `python3 bench/tilt_accuracy.py --cases slab-layers2 slab --noise 1000
// --no-reference --variants defaults`). Over +-70 degrees in 2-degree
// steps, 20 views (40 degrees) left two layers at 0.171 px, three at 0.280
// and at +2 degrees 0.333; 20 degrees (10 views) 0.127, 0.182 and 0.246,
// the 8-px slab 0.026 -> 0.030, every other series within 0.001 (`python3
// bench/tilt_accuracy.py --views 71 --range 70 --noise 1000 --no-reference
// --variants defaults`). The axis fit's and the along-axis corrections'
// segments stay counted in views: in degrees as well they took two layers
// to 0.135 and the wide slab 0.052 -> 0.059.
constexpr double kSegmentDegrees = 20;
// Views a segment holds at least, however coarse the steps: its point
// (x, z) takes two of them.
constexpr int kLeastSegment = 6;
constexpr int kGroups = 20;      // jackknife groups of tracks
constexpr int kReweighting = 4;  // fits, each dropping positions beyond 4 robust sigmas of the last

struct Position {
    int view;
    double u, w;  // across-axis place (from the grid's centre), weight
};

// The normal equations of the views' corrections with each segment's point
// (X cos t + Z sin t) eliminated: a segment adds W - W C (C^T W C)^-1 C^T W
// over its views, C its rows (cos t, sin t).
void add_segment(const std::vector<Position>& s, const std::vector<double>& c, const std::vector<double>& sn,
                 Eigen::MatrixXd& m, Eigen::VectorXd& r) {
    Eigen::Matrix2d ctc = Eigen::Matrix2d::Zero();
    for (const Position& p : s) {
        const Eigen::Vector2d row(c[p.view], sn[p.view]);
        ctc += p.w * row * row.transpose();
    }
    if (std::fabs(ctc.determinant()) < 1e-12) return;
    const Eigen::Matrix2d inv = ctc.inverse();
    for (const Position& p : s) {
        if (p.w <= 0) continue;
        const Eigen::Vector2d ri(c[p.view], sn[p.view]);
        double rhs = 0;
        for (const Position& q : s) {
            if (q.w <= 0) continue;
            const Eigen::Vector2d rj(c[q.view], sn[q.view]);
            const double k = (&p == &q ? p.w : 0.0) - p.w * q.w * ri.dot(inv * rj);
            m(p.view, q.view) += k;
            rhs += k * q.u;
        }
        r[p.view] += rhs;
    }
}

// The least-squares corrections, the reference's held at 0 (and views no
// segment reaches).
Eigen::VectorXd solved(Eigen::MatrixXd m, Eigen::VectorXd r, int reference) {
    for (int i = 0; i < m.rows(); ++i)
        if (m(i, i) <= 0 || i == reference) {
            m.row(i).setZero(), m.col(i).setZero(), m(i, i) = 1, r[i] = 0;
        }
    // c + a cos t + b sin t is no error the tracks can see; a little ridge
    // picks one of the equal answers, and less_object_place the rest.
    m.diagonal().array() += 1e-9 * m.diagonal().maxCoeff();
    return m.ldlt().solve(r);
}

using SegmentPoint = std::optional<std::pair<Eigen::Vector2d, double>>;

// The segment's point (X, Z) fitted to its kept positions less the views'
// corrections `a`, and Z's variance factor (C^T W C)^-1 (1, 1); none where
// its views do not fix both.
SegmentPoint segment_point(const std::vector<Position>& s, const std::vector<double>& c, const std::vector<double>& sn,
                           const Eigen::VectorXd& a) {
    Eigen::Matrix2d ctc = Eigen::Matrix2d::Zero();
    Eigen::Vector2d ctu = Eigen::Vector2d::Zero();
    for (const Position& p : s) {
        const Eigen::Vector2d row(c[p.view], sn[p.view]);
        ctc += p.w * row * row.transpose(), ctu += p.w * row * (p.u - a[p.view]);
    }
    if (std::fabs(ctc.determinant()) < 1e-12) return std::nullopt;
    const Eigen::Matrix2d inv = ctc.inverse();
    return std::make_pair(Eigen::Vector2d(inv * ctu), inv(1, 1));
}

// The residuals of the segment's positions about its point (0, 0 where it has none).
void segment_residuals(const std::vector<Position>& s, const std::vector<double>& c, const std::vector<double>& sn,
                       const Eigen::VectorXd& a, const SegmentPoint& point, std::vector<double>& out) {
    const Eigen::Vector2d xz = point ? point->first : Eigen::Vector2d::Zero();
    for (const Position& p : s) out.push_back(p.u - a[p.view] - xz[0] * c[p.view] - xz[1] * sn[p.view]);
}

}  // namespace

int across_segment_views(const std::vector<double>& tilts) {
    std::vector<double> steps;
    for (std::size_t i = 1; i < tilts.size(); ++i) steps.push_back(std::fabs(tilts[i] - tilts[i - 1]));
    const double step = median(std::move(steps));
    if (!(step > 0)) return kLeastSegment;
    return std::max(kLeastSegment, int(std::lround(kSegmentDegrees / step)));
}

AcrossCorrection across_correction_from_tracks(const PatchTracks& tracks, const std::vector<double>& tilts,
                                               int reference) {
    const int n = tracks.x.empty() ? 0 : int(tracks.x.front().size());
    if (n < 3 || int(tilts.size()) != n)
        throw InputError("across-axis corrections from tracks: at least 3 views are needed");
    const double cx = (tracks.width - 1) / 2.0;
    std::vector<double> c(n), sn(n);
    for (int i = 0; i < n; ++i) c[i] = std::cos(tilts[i] * M_PI / 180), sn[i] = std::sin(tilts[i] * M_PI / 180);

    const int segment = across_segment_views(tilts);
    std::vector<std::vector<Position>> segments;
    std::vector<int> group;
    int tracked = 0;
    for (std::size_t p = 0; p < tracks.x.size(); ++p) {
        int present = 0;
        for (int i = 0; i < n; ++i) present += !std::isnan(tracks.x[p][i]);
        if (present < 3) continue;
        ++tracked;
        for (const auto& [first, last] : segment_windows(n, segment)) {
            std::vector<Position> s;
            for (int i = first; i < last; ++i)
                if (!std::isnan(tracks.x[p][i])) s.push_back({i, tracks.x[p][i] - cx, 1.0});
            if (s.size() >= 4) segments.push_back(std::move(s)), group.push_back(tracked % kGroups);
        }
    }
    if (tracked < 4)
        throw InputError("across-axis corrections from tracks: " + std::to_string(tracked) +
                         " patches followed beyond the reference view (at least 4 needed)");

    std::vector<Eigen::MatrixXd> gm(kGroups, Eigen::MatrixXd::Zero(n, n));
    std::vector<Eigen::VectorXd> gr(kGroups, Eigen::VectorXd::Zero(n));
    Eigen::MatrixXd m;
    Eigen::VectorXd r, a;
    auto fit = [&] {
        for (int g = 0; g < kGroups; ++g) gm[g].setZero(), gr[g].setZero();
        for (std::size_t s = 0; s < segments.size(); ++s) add_segment(segments[s], c, sn, gm[group[s]], gr[group[s]]);
        m = Eigen::MatrixXd::Zero(n, n), r = Eigen::VectorXd::Zero(n);
        for (int g = 0; g < kGroups; ++g) m += gm[g], r += gr[g];
        a = solved(m, r, reference);
    };
    fit();
    for (int round = 1; round < kReweighting; ++round) {
        std::vector<double> all;
        for (const auto& s : segments) segment_residuals(s, c, sn, a, segment_point(s, c, sn, a), all);
        reweight_positions(segments, all);
        fit();
    }
    std::vector<bool> reached(n, false);
    for (int i = 0; i < n; ++i) reached[i] = m(i, i) > 0;
    AcrossCorrection out;
    out.tracks = tracked;
    out.segment_views = segment;
    auto less_place = [&](const Eigen::VectorXd& x) {
        return less_object_place(std::vector<double>(x.data(), x.data() + x.size()), tilts, &reached);
    };
    out.across_px = less_place(a);
    std::vector<std::vector<double>> left_out(n);
    for (int g = 0; g < kGroups; ++g) {
        const Eigen::VectorXd ag = solved(m - gm[g], r - gr[g], reference);
        if (!ag.allFinite()) continue;
        const std::vector<double> x = less_place(ag);
        for (int i = 0; i < n; ++i) left_out[i].push_back(x[i]);
    }
    out.across_error_px.assign(n, 0.0);
    for (int i = 0; i < n; ++i) out.across_error_px[i] = jackknife_error(left_out[i]);
    double ss = 0;
    std::vector<double> res;
    for (std::size_t s = 0; s < segments.size(); ++s) {
        const SegmentPoint point = segment_point(segments[s], c, sn, a);
        if (point && point->second > 0)
            out.points.push_back({point->first[0], point->first[1], 1.0 / point->second, group[s]});
        res.clear();
        segment_residuals(segments[s], c, sn, a, point, res);
        for (std::size_t k = 0; k < res.size(); ++k)
            if (segments[s][k].w > 0) ss += res[k] * res[k], ++out.positions;
    }
    out.residual_px = out.positions ? std::sqrt(ss / out.positions) : 0.0;
    return out;
}

}  // namespace stackalign
