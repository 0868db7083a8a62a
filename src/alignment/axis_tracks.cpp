#include "axis_tracks.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "../core/error.hpp"
#include "../core/workers.hpp"
#include "jackknife.hpp"
#include "robust_weights.hpp"
#include "track_groups.hpp"
#include "track_segments.hpp"

namespace stackalign {
namespace {

constexpr int kGroups = 20;          // jackknife groups: of tracks, at most of columns
constexpr int kReweighting = 4;      // fits, each dropping positions beyond 4 robust sigmas of the last

// One track segment's positions: view, across-axis place u, along-axis v.
struct Position {
    int view;
    double u, v, w;
};

// Least squares for b (per view, the reference's held at 0) and delta over
// segments, each segment's own along-axis place eliminated (its weighted
// mean). Normal equations summed per jackknife group.
struct Fit {
    int n, reference;
    int col(int view) const { return view < reference ? view : view - 1; }
    int delta() const { return n - 1; }
};

// A position's row of the design is 1 in its view's b column (none for the
// reference) and -u in delta's. With the segment's weighted mean row
// removed, sum w (phi - mean)(phi - mean)^T = sum w phi phi^T - sw mean
// mean^T, whose first term is a few totals and whose second is rank one
// over the segment's views: O(views^2) a segment. Forming each centred
// row, O(positions x columns^2), the whole fit took 0.12 s a round,
// single-threaded, on the H200 host (the 121 x 512^2 tilt job, `build/bench
// stages "tilt series"`).
void add_segment(const Fit& fit, const std::vector<Position>& s, Eigen::MatrixXd& m, Eigen::VectorXd& r) {
    double sw = 0, su = 0, sv = 0;
    for (const Position& p : s) sw += p.w, su += p.w * p.u, sv += p.w * p.v;
    if (sw <= 0) return;
    const double vmean = sv / sw, umean = su / sw;
    const int d = fit.delta();
    double suu = 0, suv = 0;
    for (const Position& p : s) {
        if (p.w <= 0) continue;
        const double dv = p.v - vmean;
        suu += p.w * (p.u - umean) * (p.u - umean), suv += p.w * (p.u - umean) * dv;
        if (p.view == fit.reference) continue;
        const int k = fit.col(p.view);
        m(k, k) += p.w, r[k] += p.w * dv;
        m(k, d) -= p.w * (p.u - umean), m(d, k) -= p.w * (p.u - umean);
        for (const Position& q : s)
            if (q.w > 0 && q.view != fit.reference) m(k, fit.col(q.view)) -= p.w * q.w / sw;
    }
    m(d, d) += suu, r[d] -= suv;
}

// Each segment's residuals at `theta`, written into `out` (same order).
void residuals(const Fit& fit, const std::vector<Position>& s, const Eigen::VectorXd& theta, std::vector<double>& out) {
    auto model = [&](const Position& p) {
        return (p.view == fit.reference ? 0.0 : theta[fit.col(p.view)]) - theta[fit.delta()] * p.u;
    };
    double sw = 0, y = 0;
    for (const Position& p : s) sw += p.w, y += p.w * (p.v - model(p));
    y = sw > 0 ? y / sw : 0;
    for (const Position& p : s) out.push_back(p.v - y - model(p));
}

// The solution of normal equations in which a view no segment reaches
// (a zero diagonal) has no b: held at 0.
Eigen::VectorXd solved(Eigen::MatrixXd m, const Eigen::VectorXd& r) {
    for (int c = 0; c < m.rows(); ++c)
        if (m(c, c) == 0) m(c, c) = 1;
    return m.ldlt().solve(r);
}

// The normal equations of the weighted positions, per jackknife group
// (segment s in (*group)[s]) and summed, or only summed where `group` is
// null, and their solution.
struct Normal {
    std::vector<Eigen::MatrixXd> gm;
    std::vector<Eigen::VectorXd> gr;
    Eigen::MatrixXd m;
    Eigen::VectorXd r, theta;
};
Normal normal_equations(const Fit& fit, const std::vector<std::vector<Position>>& segments,
                        const std::vector<int>* group) {
    const int groups = group ? kGroups : 0;
    Normal e{std::vector<Eigen::MatrixXd>(groups, Eigen::MatrixXd::Zero(fit.n, fit.n)),
             std::vector<Eigen::VectorXd>(groups, Eigen::VectorXd::Zero(fit.n)), Eigen::MatrixXd::Zero(fit.n, fit.n),
             Eigen::VectorXd::Zero(fit.n), {}};
    if (group) {
        for (std::size_t s = 0; s < segments.size(); ++s) add_segment(fit, segments[s], e.gm[(*group)[s]], e.gr[(*group)[s]]);
        for (int g = 0; g < groups; ++g) e.m += e.gm[g], e.r += e.gr[g];
    } else {
        for (const auto& segment : segments) add_segment(fit, segment, e.m, e.r);
    }
    e.theta = solved(e.m, e.r);
    return e;
}

// Positions beyond 4 robust sigmas of the fit at `theta` weighted 0, the
// others 1.
void reweight(const Fit& fit, std::vector<std::vector<Position>>& segments, const Eigen::VectorXd& theta) {
    std::vector<double> all;
    for (const auto& s : segments) residuals(fit, s, theta, all);
    reweight_positions(segments, all);
}

// The fit: kReweighting rounds, each after reweighting by the last
// (`segments`' weights are left at the last round's); `group` as
// normal_equations takes it.
Normal robust_fit(const Fit& fit, std::vector<std::vector<Position>>& segments, const std::vector<int>* group) {
    Normal eq = normal_equations(fit, segments, group);
    for (int round = 1; round < kReweighting; ++round) {
        reweight(fit, segments, eq.theta);
        eq = normal_equations(fit, segments, group);
    }
    return eq;
}

// Each track's mirror image across the line through the grid's centre
// that crosses the axis: the track that started at the same place across
// the axis and the opposite place along it (-1 where there is none).
std::vector<int> mirror_tracks(const PatchTracks& tracks, int reference, double cy) {
    const std::size_t n = tracks.x.size();
    std::vector<int> m(n, -1);
    for (std::size_t p = 0; p < n; ++p) {
        const double xp = tracks.x[p][reference], yp = tracks.y[p][reference];
        if (std::isnan(xp)) continue;
        for (std::size_t q = 0; q < n; ++q) {
            const double xq = tracks.x[q][reference], yq = tracks.y[q][reference];
            if (!std::isnan(xq) && std::fabs(xq - xp) < 0.5 && std::fabs(yq + yp - 2 * cy) < 0.5) {
                m[p] = int(q);
                break;
            }
        }
    }
    return m;
}

}  // namespace

AxisCorrection axis_correction_from_tracks(const PatchTracks& tracks, int reference, int segment_views) {
    if (segment_views < 3) throw std::invalid_argument("axis_correction_from_tracks: segments of at least 3 views");
    const int n = tracks.x.empty() ? 0 : int(tracks.x.front().size());
    if (n < 3) throw InputError("tilt axis from tracks: at least 3 views are needed");
    const double cx = (tracks.width - 1) / 2.0, cy = (tracks.height - 1) / 2.0;

    const std::vector<int> mirror = mirror_tracks(tracks, reference, cy);
    // A place counts only where its mirror image was followed in the same
    // view: each view's places are then symmetric along the axis, and a
    // view's own along-axis scale (magnification, or a slab's depth layers
    // weighted differently with the tilt) cannot pass for a turn of the
    // axis through places along and across it that go together. On the
    // bench's slab (1000 photons) the axis at 80 / 84 / 6 degrees came out
    // -0.25 / -0.18 / +0.21 off with every followed place, -0.08 / -0.03 /
    // +0.01 with the mirrored ones (`python3 bench/tilt_accuracy.py --cases
    // slab-oblique --axis A --noise 1000 --no-reference`); tests/
    // test_axis_tracks.cpp shows the mechanism on made-up tracks.
    auto present_at = [&](std::size_t p, int i) {
        return !std::isnan(tracks.x[p][i]) && mirror[p] >= 0 && !std::isnan(tracks.x[mirror[p]][i]);
    };
    // Segments of segment_views views, half overlapping, of 3 positions or more.
    std::vector<std::vector<Position>> segments;
    std::vector<int> by_track, by_column;
    std::vector<bool> counted(tracks.x.size());
    for (std::size_t p = 0; p < tracks.x.size(); ++p) {
        int present = 0;
        for (int i = 0; i < n; ++i) present += present_at(p, i);
        counted[p] = present >= 3;
    }
    const TrackGroups columns = track_groups(tracks, reference, counted, kGroups);
    int tracked = 0;
    for (std::size_t p = 0; p < tracks.x.size(); ++p) {
        if (!counted[p]) continue;
        ++tracked;
        for (const auto& [first, last] : segment_windows(n, segment_views)) {
            std::vector<Position> s;
            for (int i = first; i < last; ++i)
                if (present_at(p, i)) s.push_back({i, tracks.x[p][i] - cx, tracks.y[p][i] - cy, 1.0});
            if (s.size() >= 3) segments.push_back(std::move(s)), by_track.push_back(tracked % kGroups),
                    by_column.push_back(columns.of[p]);
        }
    }
    if (tracked < 4)
        throw InputError("tilt axis from tracks: " + std::to_string(tracked) + " of " +
                         std::to_string(tracks.x.size()) + " patches of " + std::to_string(tracks.patch_px) +
                         " px on views of " + std::to_string(tracks.width) + "x" + std::to_string(tracks.height) +
                         " px could be followed beyond the reference view (at least 4 needed)");

    const Fit fit{n, reference};
    const std::vector<std::vector<Position>> unweighted = segments;
    const Normal eq = robust_fit(fit, segments, &by_track);
    AxisCorrection out;
    out.delta_deg = std::asin(std::clamp(eq.theta[fit.delta()], -1.0, 1.0)) * 180 / M_PI;
    // Two jackknifes. The views' along-axis places: over groups of every
    // 20th track at the last weights, the scatter between tracks, against
    // which pipelines/stages/axis_by_tracks.cpp weighs them. The axis: over
    // columns of neighbouring tracks (track_groups.hpp), whose shared
    // errors its stated error must cover, each column left out and the
    // robust fit made again without it: at the whole fit's weights, the
    // positions of columns that disagree were already weighted out, and on
    // made-up tracks whose columns each turn by their own amount the axis
    // was 2.9 stated errors off RMS, against 1.4 refitted, and 18.6 with
    // the interleaved groups (tests/test_axis_tracks.cpp). On the bench's
    // 47 series the stated errors grew from 0.01-0.15 to 0.01-0.23
    // degrees, and the truth came within 2 of them on all (it had been
    // beyond on 8, the wide and layered slabs: `python3 bench/tilt_accuracy.py
    // --noise 0 1000 100 --no-reference --variants defaults`, and seeds 8
    // and 9 at 1000).
    std::vector<std::vector<double>> along_left_out(n);
    for (int g = 0; g < kGroups; ++g) {
        const Eigen::VectorXd tg = solved(eq.m - eq.gm[g], eq.r - eq.gr[g]);
        if (!tg.allFinite()) continue;
        for (int i = 0; i < n; ++i)
            if (i != reference) along_left_out[i].push_back(tg[fit.col(i)]);
    }
    out.along_error_px.assign(n, 0.0);
    for (int i = 0; i < n; ++i) out.along_error_px[i] = jackknife_error(along_left_out[i]);
    std::vector<double> column_left_out(columns.count, NAN);
    run_tasks(columns.count, [&](int g) {
        std::vector<std::vector<Position>> others;
        for (std::size_t k = 0; k < unweighted.size(); ++k)
            if (by_column[k] != g) others.push_back(unweighted[k]);
        column_left_out[g] = robust_fit(fit, others, nullptr).theta[fit.delta()];
    });
    std::vector<double> left_out;
    for (double d : column_left_out)
        if (std::isfinite(d)) left_out.push_back(d);
    out.standard_error = jackknife_error(left_out) * 180 / M_PI;
    out.tracks = tracked;
    out.along_px.assign(n, 0.0);
    for (int i = 0; i < n; ++i)
        if (i != reference) out.along_px[i] = eq.theta[fit.col(i)];
    double sr = 0;
    std::vector<double> res;
    for (const auto& s : segments) {
        res.clear();
        residuals(fit, s, eq.theta, res);
        for (std::size_t k = 0; k < res.size(); ++k)
            if (s[k].w > 0) sr += res[k] * res[k], ++out.positions;
    }
    out.residual_px = out.positions ? std::sqrt(sr / out.positions) : 0.0;
    return out;
}

}  // namespace stackalign
