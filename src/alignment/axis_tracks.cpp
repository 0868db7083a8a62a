#include "axis_tracks.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include "../core/error.hpp"
#include "../core/workers.hpp"
#include "band_pass.hpp"
#include "jackknife.hpp"

namespace stackalign {
namespace {

constexpr int kPatch = 32;           // pixels a side
constexpr int kSearch = 2;           // whole pixels searched about the predicted place
constexpr int kNewtonSteps = 8;      // sub-pixel steps (Lucas-Kanade) at most
constexpr double kMinCorrelation = 0.5;  // below it a patch is lost, and its track ends
constexpr int kSegment = 20;         // views a track's along-axis position is held over
constexpr int kMaxTracks = 100;      // patches tracked at most (a sparser grid on larger views)
constexpr int kGroups = 20;          // jackknife groups of tracks
constexpr int kClear = 4;            // pixels kept clear of a view's missing data (the band-pass's reach)
constexpr int kReweighting = 4;      // fits, each dropping positions beyond 4 robust sigmas of the last

// Keys' cubic convolution kernel (a = -1/2) and its slope: sub-pixel samples
// and their gradient from the same interpolant.
double keys(double x) {
    x = std::fabs(x);
    if (x < 1) return (1.5 * x - 2.5) * x * x + 1;
    if (x < 2) return ((-0.5 * x + 2.5) * x - 4) * x + 2;
    return 0;
}
double keys_slope(double x) {
    const double s = x < 0 ? -1 : 1;
    x = std::fabs(x);
    if (x < 1) return s * (4.5 * x - 5) * x;
    if (x < 2) return s * ((-1.5 * x + 5) * x - 4);
    return 0;
}

struct View {
    int w = 0, h = 0;
    std::vector<float> band;          // band-passed, missing data as the view's mean
    std::vector<unsigned char> clear;  // 1 where the band-pass saw no missing data
    bool ok(int x, int y) const { return x >= 0 && y >= 0 && x < w && y < h && clear[std::size_t(y) * w + x]; }
};

View prepared(const ImageF& in) {
    View v;
    v.w = in.width;
    v.h = in.height;
    double sum = 0;
    long count = 0;
    for (float p : in.pixels)
        if (!std::isnan(p)) sum += p, ++count;
    ImageF filled = in;
    for (float& p : filled.pixels)
        if (std::isnan(p)) p = float(count ? sum / count : 0.0);
    // The first estimate's band (sigma 1 and 4 px). With 6 in place of 4
    // the whole object of `python3 bench/tilt_accuracy.py` came out 0.14-0.30
    // degrees off (0.02-0.08 with 4), the slab at 84 degrees 0.08-0.21.
    v.band = band_pass(filled, 1.0, 4.0);
    // Clear: no missing pixel within kClear (a square about each pixel, by rows then columns).
    std::vector<unsigned char> rows(in.pixels.size());
    for (int y = 0; y < v.h; ++y)
        for (int x = 0; x < v.w; ++x) {
            bool c = true;
            for (int i = std::max(0, x - kClear); i <= std::min(v.w - 1, x + kClear) && c; ++i)
                c = !std::isnan(in.pixels[std::size_t(y) * v.w + i]);
            rows[std::size_t(y) * v.w + x] = c && x >= kClear && x < v.w - kClear;
        }
    v.clear.assign(in.pixels.size(), 0);
    for (int y = kClear; y < v.h - kClear; ++y)
        for (int x = 0; x < v.w; ++x) {
            bool c = true;
            for (int j = y - kClear; j <= y + kClear && c; ++j) c = rows[std::size_t(j) * v.w + x];
            v.clear[std::size_t(y) * v.w + x] = c;
        }
    return v;
}

// A patch's sample offsets about its centre: i - (side - 1) / 2.
double offset_of(int i, int side = kPatch) { return i - (side - 1) / 2.0; }
// The whole-pixel search samples one patch this much larger a side.
constexpr int kWide = kPatch + 2 * kSearch;

// Whether every tap of a patch centred at (cx, cy) (grid pixels), stretched
// by k across, lies where the view has data. The clear region is convex
// per view (a frame's footprint on the grid), so its corners decide.
bool patch_fits(const View& v, double cx, double cy, double k, int side = kPatch) {
    const double x0 = cx + k * offset_of(0, side), x1 = cx + k * offset_of(side - 1, side);
    const double y0 = cy + offset_of(0, side), y1 = cy + offset_of(side - 1, side);
    const int ax = int(std::floor(std::min(x0, x1))) - 1, bx = int(std::floor(std::max(x0, x1))) + 2;
    const int ay = int(std::floor(y0)) - 1, by = int(std::floor(y1)) + 2;
    return v.ok(ax, ay) && v.ok(bx, ay) && v.ok(ax, by) && v.ok(bx, by);
}

// The patch's samples (side x side, row-major) and, where asked, their x
// and y slopes. Rows are whole pixels apart, so every row shares one
// vertical phase: the 4 vertical taps are applied first, to every column
// the patch reaches (contiguous, vectorised), then each sample's 4
// horizontal taps; a stretched patch's columns each have their own phase.
void sample_patch(const View& v, double cx, double cy, double k, float* f, float* gx, float* gy, int side = kPatch) {
    double wy[4], dy[4];
    const double y = cy + offset_of(0, side);
    const int y0 = int(std::floor(y));
    const double ty = y - y0;
    for (int a = 0; a < 4; ++a) wy[a] = keys(ty - (a - 1)), dy[a] = keys_slope(ty - (a - 1));
    int x0[kWide];
    double wx[kWide][4], dx[kWide][4];
    int lo = INT_MAX, hi = INT_MIN;
    for (int i = 0; i < side; ++i) {
        const double x = cx + k * offset_of(i, side);
        x0[i] = int(std::floor(x));
        const double tx = x - x0[i];
        for (int b = 0; b < 4; ++b) wx[i][b] = keys(tx - (b - 1)), dx[i][b] = keys_slope(tx - (b - 1));
        lo = std::min(lo, x0[i] - 1), hi = std::max(hi, x0[i] + 2);
    }
    const int span = hi - lo + 1;
    thread_local std::vector<double> column, column_dy;
    column.resize(std::size_t(side) * span);
    if (gy) column_dy.resize(std::size_t(side) * span);
    for (int j = 0; j < side; ++j) {
        const float* r0 = &v.band[std::size_t(y0 + j - 1) * v.w + lo];
        const float *r1 = r0 + v.w, *r2 = r1 + v.w, *r3 = r2 + v.w;
        double* c = &column[std::size_t(j) * span];
        for (int q = 0; q < span; ++q) c[q] = wy[0] * r0[q] + wy[1] * r1[q] + wy[2] * r2[q] + wy[3] * r3[q];
        if (gy) {
            double* d = &column_dy[std::size_t(j) * span];
            for (int q = 0; q < span; ++q) d[q] = dy[0] * r0[q] + dy[1] * r1[q] + dy[2] * r2[q] + dy[3] * r3[q];
        }
    }
    for (int j = 0; j < side; ++j) {
        const double* c = &column[std::size_t(j) * span];
        for (int i = 0; i < side; ++i) {
            const double* t = c + (x0[i] - 1 - lo);
            f[j * side + i] = float(wx[i][0] * t[0] + wx[i][1] * t[1] + wx[i][2] * t[2] + wx[i][3] * t[3]);
            if (gx) {
                const double* d = &column_dy[std::size_t(j) * span] + (x0[i] - 1 - lo);
                gx[j * side + i] = float(dx[i][0] * t[0] + dx[i][1] * t[1] + dx[i][2] * t[2] + dx[i][3] * t[3]);
                gy[j * side + i] = float(wx[i][0] * d[0] + wx[i][1] * d[1] + wx[i][2] * d[2] + wx[i][3] * d[3]);
            }
        }
    }
}

// The correlation of the normalised template with the patch at row
// stride `stride` (a window of a wider sampling, or a patch itself).
double correlation(const float* t, const float* f, int stride = kPatch) {
    double s = 0, ss = 0, st = 0;
    for (int j = 0; j < kPatch; ++j)
        for (int i = 0; i < kPatch; ++i) s += f[j * stride + i];
    const double m = s / (kPatch * kPatch);
    for (int j = 0; j < kPatch; ++j)
        for (int i = 0; i < kPatch; ++i) {
            const double d = f[j * stride + i] - m;
            ss += d * d, st += t[j * kPatch + i] * d;
        }
    return ss > 1e-20 ? st / std::sqrt(ss) : 0.0;
}

// A patch to find in the next view: its samples, mean removed and scaled
// to unit norm, their slopes (scaled alike), and the least-squares system
// of f = alpha t + beta - g . (alpha d), which does not change while the
// patch is sought (inverse compositional: the template's slopes, not the
// view's, so each step samples the view once, without slopes).
struct Template {
    float t[kPatch * kPatch], tx[kPatch * kPatch], ty[kPatch * kPatch];
    Eigen::LDLT<Eigen::Matrix4d> system;
};

// False where the patch is flat.
bool make_template(const View& v, double cx, double cy, Template& out) {
    sample_patch(v, cx, cy, 1.0, out.t, out.tx, out.ty);
    double s = 0, ss = 0;
    for (int k = 0; k < kPatch * kPatch; ++k) s += out.t[k];
    const double m = s / (kPatch * kPatch);
    for (int k = 0; k < kPatch * kPatch; ++k) ss += (out.t[k] - m) * (out.t[k] - m);
    if (!(ss > 1e-20)) return false;
    const double n = 1 / std::sqrt(ss);
    Eigen::Matrix4d h = Eigen::Matrix4d::Zero();
    for (int k = 0; k < kPatch * kPatch; ++k) {
        out.t[k] = float((out.t[k] - m) * n), out.tx[k] = float(out.tx[k] * n), out.ty[k] = float(out.ty[k] * n);
        const Eigen::Vector4d a(out.t[k], 1.0, -out.tx[k], -out.ty[k]);
        h += a * a.transpose();
    }
    out.system.compute(h);
    return out.system.info() == Eigen::Success;
}

// Where the template lies in view `v`, starting from (cx, cy): the best
// whole-pixel place within kSearch by correlation (the windows of one
// wider sampling: a stretched patch's columns are then k px apart, not 1,
// which a whole-pixel search does not see), then Gauss-Newton steps. False
// where it is lost.
bool locate(const View& v, const Template& t, double k, double& cx, double& cy) {
    if (!patch_fits(v, cx, cy, k, kWide)) return false;
    float wide[kWide * kWide];
    sample_patch(v, cx, cy, k, wide, nullptr, nullptr, kWide);
    double best = -2, bx = cx, by = cy;
    for (int b = -kSearch; b <= kSearch; ++b)
        for (int a = -kSearch; a <= kSearch; ++a) {
            const double c = correlation(t.t, &wide[(b + kSearch) * kWide + (a + kSearch)], kWide);
            if (c > best) best = c, bx = cx + a, by = cy + b;
        }
    float f[kPatch * kPatch];
    double x = bx, y = by;
    for (int step = 0; step < kNewtonSteps; ++step) {
        if (!patch_fits(v, x, y, k)) return false;
        sample_patch(v, x, y, k, f, nullptr, nullptr);
        Eigen::Vector4d r = Eigen::Vector4d::Zero();
        for (int q = 0; q < kPatch * kPatch; ++q)
            r += Eigen::Vector4d(t.t[q], 1.0, -t.tx[q], -t.ty[q]) * double(f[q]);
        const Eigen::Vector4d s = t.system.solve(r);
        if (!s.allFinite() || !(s[0] > 1e-6)) return false;
        // alpha d, in the template's pixels: across, the view's are k of them.
        const double ddx = std::clamp(k * s[2] / s[0], -1.0, 1.0), ddy = std::clamp(s[3] / s[0], -1.0, 1.0);
        x += ddx, y += ddy;
        if (std::fabs(ddx) < 1e-3 && std::fabs(ddy) < 1e-3) break;
    }
    if (std::hypot(x - bx, y - by) > 1.5 || !patch_fits(v, x, y, k)) return false;
    sample_patch(v, x, y, k, f, nullptr, nullptr);
    if (correlation(t.t, f) < kMinCorrelation) return false;
    cx = x, cy = y;
    return true;
}

// One patch's track: its place (grid pixels) in every view, NaN where lost.
struct Track {
    std::vector<double> x, y;
};

// A patch's track from the reference outwards in one direction (dir +1 or
// -1), into `tr` (which holds its place in the reference view). The two
// directions touch different views, so they are tracked at once: one task
// a patch made 81 tasks of unequal length for 16 threads, two a patch
// make shorter ones to even out (timed only with the fit's change).
void track_patch(const std::vector<View>& views, const std::vector<double>& cosines, int reference, int dir,
                 bool slab, Track& tr) {
    const int n = int(views.size());
    Template t;
    int prev = reference;
    for (int i = reference + dir; i >= 0 && i < n; i += dir) {
        const View& p = views[prev];
        if (!patch_fits(p, tr.x[prev], tr.y[prev], 1.0) || !make_template(p, tr.x[prev], tr.y[prev], t)) break;
        // A slab's patch foreshortens about the axis (the grid's centre column).
        const double k = slab ? cosines[i] / cosines[prev] : 1.0;
        const double c = (p.w - 1) / 2.0;
        double x = c + (tr.x[prev] - c) * k, y = tr.y[prev];
        if (!locate(views[i], t, k, x, y)) break;
        tr.x[i] = x, tr.y[i] = y;
        prev = i;
    }
}

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
// (segment s in group[s]) and summed, and their solution.
struct Normal {
    std::vector<Eigen::MatrixXd> gm;
    std::vector<Eigen::VectorXd> gr;
    Eigen::MatrixXd m;
    Eigen::VectorXd r, theta;
};
Normal normal_equations(const Fit& fit, const std::vector<std::vector<Position>>& segments,
                        const std::vector<int>& group) {
    Normal e{std::vector<Eigen::MatrixXd>(kGroups, Eigen::MatrixXd::Zero(fit.n, fit.n)),
             std::vector<Eigen::VectorXd>(kGroups, Eigen::VectorXd::Zero(fit.n)), Eigen::MatrixXd::Zero(fit.n, fit.n),
             Eigen::VectorXd::Zero(fit.n), {}};
    for (std::size_t s = 0; s < segments.size(); ++s) add_segment(fit, segments[s], e.gm[group[s]], e.gr[group[s]]);
    for (int g = 0; g < kGroups; ++g) e.m += e.gm[g], e.r += e.gr[g];
    e.theta = solved(e.m, e.r);
    return e;
}

// Positions beyond 4 robust sigmas of the fit at `theta` weighted 0, the
// others 1.
void reweight(const Fit& fit, std::vector<std::vector<Position>>& segments, const Eigen::VectorXd& theta) {
    std::vector<double> all;
    for (const auto& s : segments) residuals(fit, s, theta, all);
    std::vector<double> kept;
    std::size_t k = 0;
    for (const auto& s : segments)
        for (const Position& p : s) {
            if (p.w > 0) kept.push_back(std::fabs(all[k]));
            ++k;
        }
    std::nth_element(kept.begin(), kept.begin() + kept.size() / 2, kept.end());
    const double limit = std::max(4 * 1.4826 * kept[kept.size() / 2], 0.02);
    k = 0;
    for (auto& s : segments)
        for (Position& p : s) p.w = std::fabs(all[k++]) < limit ? 1.0 : 0.0;
}

}  // namespace

AxisCorrection axis_correction_from_tracks(const std::vector<ImageF>& in, const std::vector<double>& tilts,
                                           int reference, bool slab) {
    const int n = int(in.size());
    if (n < 3) throw InputError("tilt axis from tracks: at least 3 views are needed");
    std::vector<View> views(n);
    run_tasks(n, [&](int i) { views[i] = prepared(in[i]); });
    std::vector<double> cosines(n);
    for (int i = 0; i < n; ++i) cosines[i] = std::cos(tilts[i] * M_PI / 180);

    // Patches on a grid over the reference view, about 20 across, 16 px
    // apart at the closest (half overlapping). The axis's scatter is the
    // tracks' drift, not their noise, so more of them help: on the bench's
    // slab at 84 degrees (1000 photons) a dozen across gave 84.16 +- 0.14,
    // 20 across 83.83 +- 0.10; the whole object there 83.68 +- 0.21 and
    // 83.97 +- 0.08 (`python3 bench/tilt_accuracy.py --cases slab-oblique
    // whole-oblique --variants 'axis=tilt_axis = "auto"'`). At most
    // kMaxTracks of them: a 512^2 view held 361, and tracking them was 2.5
    // s of the H200 host's 16 cores, the rest of the job 0.44 s.
    const View& ref = views[reference];
    const double cx = (ref.w - 1) / 2.0, cy = (ref.h - 1) / 2.0;
    const double reach_x = ref.w / 2.0 - kPatch / 2.0 - kClear - 2, reach_y = ref.h / 2.0 - kPatch / 2.0 - kClear - 2;
    int step = std::max(kPatch / 2, ref.w / 20), nx = 0, ny = 0;
    for (;; ++step) {
        nx = int(reach_x / step), ny = int(reach_y / step);
        if ((2 * nx + 1) * (2 * ny + 1) <= kMaxTracks) break;
    }
    std::vector<std::pair<double, double>> starts;
    for (int j = -ny; j <= ny; ++j)
        for (int i = -nx; i <= nx; ++i) starts.push_back({cx + i * step, cy + j * step});
    std::vector<Track> tracks(starts.size(), Track{std::vector<double>(n, NAN), std::vector<double>(n, NAN)});
    for (std::size_t p = 0; p < starts.size(); ++p)
        tracks[p].x[reference] = starts[p].first, tracks[p].y[reference] = starts[p].second;
    run_tasks(2 * int(starts.size()), [&](int q) {
        track_patch(views, cosines, reference, q % 2 ? -1 : 1, slab, tracks[q / 2]);
    });

    // Segments of kSegment views, half overlapping, of 3 positions or more.
    std::vector<std::vector<Position>> segments;
    std::vector<int> group;
    int tracked = 0;
    for (std::size_t p = 0; p < tracks.size(); ++p) {
        int present = 0;
        for (int i = 0; i < n; ++i) present += !std::isnan(tracks[p].x[i]);
        if (present < 3) continue;
        ++tracked;
        for (int s0 = 0; s0 < n; s0 += kSegment / 2) {
            std::vector<Position> s;
            for (int i = s0; i < std::min(n, s0 + kSegment); ++i)
                if (!std::isnan(tracks[p].x[i])) s.push_back({i, tracks[p].x[i] - cx, tracks[p].y[i] - cy, 1.0});
            if (s.size() >= 3) segments.push_back(std::move(s)), group.push_back(tracked % kGroups);
            if (s0 + kSegment >= n) break;
        }
    }
    if (tracked < 4)
        throw InputError("tilt axis from tracks: " + std::to_string(tracked) + " of " +
                         std::to_string(starts.size()) + " patches of " + std::to_string(kPatch) + " px on views of " +
                         std::to_string(ref.w) + "x" + std::to_string(ref.h) +
                         " px could be followed beyond the reference view (at least 4 needed)");

    const Fit fit{n, reference};
    Normal eq = normal_equations(fit, segments, group);
    for (int round = 1; round < kReweighting; ++round) {
        reweight(fit, segments, eq.theta);
        eq = normal_equations(fit, segments, group);
    }
    AxisCorrection out;
    out.delta_deg = std::asin(std::clamp(eq.theta[fit.delta()], -1.0, 1.0)) * 180 / M_PI;
    // The jackknife over groups of tracks, at the last weights.
    std::vector<double> left_out;
    std::vector<std::vector<double>> along_left_out(n);
    for (int g = 0; g < kGroups; ++g) {
        const Eigen::VectorXd tg = solved(eq.m - eq.gm[g], eq.r - eq.gr[g]);
        if (!tg.allFinite()) continue;
        left_out.push_back(tg[fit.delta()]);
        for (int i = 0; i < n; ++i)
            if (i != reference) along_left_out[i].push_back(tg[fit.col(i)]);
    }
    out.standard_error = jackknife_error(left_out) * 180 / M_PI;
    out.along_error_px.assign(n, 0.0);
    for (int i = 0; i < n; ++i) out.along_error_px[i] = jackknife_error(along_left_out[i]);
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
