// The CPU twin of patch_tracks.hpp: one task per (patch, direction).
#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include "../../src/alignment/band_pass.hpp"
#include "../../src/core/workers.hpp"
#include "patch_tracks.hpp"
#include "track_steps.hpp"

namespace stackalign::cpu {
namespace {
using namespace tracks;

struct PreparedView {
    std::vector<float> band;
    std::vector<unsigned char> clear;
    TrackView view;
};

PreparedView prepared(const ImageF& in) {
    PreparedView v;
    const int w = in.width, h = in.height;
    double sum = 0;
    long count = 0;
    for (float p : in.pixels)
        if (!std::isnan(p)) sum += p, ++count;
    ImageF filled = in;
    const float mean = float(count ? sum / count : 0.0);
    for (float& p : filled.pixels)
        if (std::isnan(p)) p = mean;
    v.band = band_pass(filled, kBandFine, kBandCoarse);
    // Clear: no missing pixel within kClear (a square about each pixel, by rows then columns).
    std::vector<unsigned char> rows(in.pixels.size());
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            bool c = true;
            for (int i = std::max(0, x - kClear); i <= std::min(w - 1, x + kClear) && c; ++i)
                c = !std::isnan(in.pixels[std::size_t(y) * w + i]);
            rows[std::size_t(y) * w + x] = c && x >= kClear && x < w - kClear;
        }
    v.clear.assign(in.pixels.size(), 0);
    for (int y = kClear; y < h - kClear; ++y)
        for (int x = 0; x < w; ++x) {
            bool c = true;
            for (int j = y - kClear; j <= y + kClear && c; ++j) c = rows[std::size_t(j) * w + x];
            v.clear[std::size_t(y) * w + x] = c;
        }
    v.view = {w, h, v.band.data(), v.clear.data()};
    return v;
}

// A patch's samples (side x side, row-major) and, where asked, their x and
// y slopes: the vertical taps once per row and pixel column the patch
// reaches (contiguous), then each sample's horizontal taps; the values
// patch_sample makes one sample at a time on the GPU.
void sample_patch(const TrackView& v, double cx, double cy, double k, float* f, float* gx, float* gy, int side) {
    const RowPhase p = row_phase(cy, side);
    ColumnPhase cols[kWide];
    int lo = INT_MAX, hi = INT_MIN;
    for (int i = 0; i < side; ++i) {
        cols[i] = column_phase(cx, k, i, side);
        lo = std::min(lo, cols[i].x0 - 1), hi = std::max(hi, cols[i].x0 + 2);
    }
    const int span = hi - lo + 1;
    thread_local std::vector<double> column, column_dy;
    column.resize(std::size_t(side) * span);
    if (gy) column_dy.resize(std::size_t(side) * span);
    for (int j = 0; j < side; ++j) {
        double* c = &column[std::size_t(j) * span];
        for (int q = 0; q < span; ++q) c[q] = column_value(v, p, j, lo + q);
        if (gy) {
            double* d = &column_dy[std::size_t(j) * span];
            for (int q = 0; q < span; ++q) d[q] = column_slope(v, p, j, lo + q);
        }
    }
    for (int j = 0; j < side; ++j) {
        const double* c = &column[std::size_t(j) * span];
        for (int i = 0; i < side; ++i) {
            const double* t = c + (cols[i].x0 - 1 - lo);
            f[j * side + i] = horizontal(cols[i].wx, t);
            if (gx) {
                const double* d = &column_dy[std::size_t(j) * span] + (cols[i].x0 - 1 - lo);
                gx[j * side + i] = horizontal(cols[i].dx, t);
                gy[j * side + i] = horizontal(cols[i].wx, d);
            }
        }
    }
}

// The correlation of the unit template with the window at row stride `stride`.
double correlation(const float* t, const float* f, int stride) {
    double s = 0;
    for (int j = 0; j < kPatch; ++j) s += row_total(f, stride, j);
    const double m = s / kArea;
    double ss = 0, st = 0;
    for (int j = 0; j < kPatch; ++j) {
        double a, b;
        correlation_row(t, f, stride, j, m, &a, &b);
        ss += a, st += b;
    }
    return correlation_of(ss, st);
}

// A patch to find in the next view: its samples, mean removed and scaled
// to unit norm, their slopes (scaled alike), and the Cholesky factor of the
// least-squares system of f = alpha t + beta - g . (alpha d), which does
// not change while the patch is sought (inverse compositional: the
// template's slopes, not the view's, so each step samples the view once).
struct Template {
    float t[kArea], tx[kArea], ty[kArea];
    double l[16];
};

// False where the patch is flat.
bool make_template(const TrackView& v, double cx, double cy, Template& out) {
    sample_patch(v, cx, cy, 1.0, out.t, out.tx, out.ty, kPatch);
    double s = 0;
    for (int j = 0; j < kPatch; ++j) s += row_total(out.t, kPatch, j);
    const double m = s / kArea;
    double ss = 0;
    for (int j = 0; j < kPatch; ++j) ss += centred_squares(out.t, j, m);
    if (!(ss > 1e-20)) return false;
    const double n = 1 / std::sqrt(ss);
    for (int q = 0; q < kArea; ++q) normalise(out.t, out.tx, out.ty, q, m, n);
    double h[16] = {0}, row[16];
    for (int j = 0; j < kPatch; ++j) {
        normal_row(out.t, out.tx, out.ty, j, row);
        for (int e = 0; e < 16; ++e) h[e] += row[e];
    }
    return cholesky4(h, out.l);
}

// Where the template lies in view `v`, starting from (cx, cy): the best
// whole-pixel place within kSearch by correlation (the windows of one
// wider sampling: a stretched patch's columns are then k px apart, not 1,
// which a whole-pixel search does not see), then Gauss-Newton steps. False
// where it is lost.
bool locate(const TrackView& v, const Template& t, double k, double& cx, double& cy) {
    if (!patch_fits(v, cx, cy, k, kWide)) return false;
    float wide[kWide * kWide];
    sample_patch(v, cx, cy, k, wide, nullptr, nullptr, kWide);
    double best = -2, bx = cx, by = cy;
    for (int b = -kSearch; b <= kSearch; ++b)
        for (int a = -kSearch; a <= kSearch; ++a) {
            const double c = correlation(t.t, &wide[(b + kSearch) * kWide + (a + kSearch)], kWide);
            if (c > best) best = c, bx = cx + a, by = cy + b;
        }
    float f[kArea];
    double x = bx, y = by;
    for (int step = 0; step < kNewtonSteps; ++step) {
        if (!patch_fits(v, x, y, k, kPatch)) return false;
        sample_patch(v, x, y, k, f, nullptr, nullptr, kPatch);
        double r[4] = {0, 0, 0, 0}, row[4], s[4], ddx, ddy;
        for (int j = 0; j < kPatch; ++j) {
            step_row(t.t, t.tx, t.ty, f, j, row);
            for (int e = 0; e < 4; ++e) r[e] += row[e];
        }
        solve4(t.l, r, s);
        if (!newton_move(s, k, &ddx, &ddy)) return false;
        x += ddx, y += ddy;
        if (settled(ddx, ddy)) break;
    }
    if (too_far(x - bx, y - by) || !patch_fits(v, x, y, k, kPatch)) return false;
    sample_patch(v, x, y, k, f, nullptr, nullptr, kPatch);
    if (correlation(t.t, f, kPatch) < kMinCorrelation) return false;
    cx = x, cy = y;
    return true;
}

// A patch's track from the reference outwards in one direction (dir +1 or
// -1), into x and y (which hold its place in the reference view). The two
// directions touch different views, so they are tracked at once: one task
// a patch made 81 tasks of unequal length for 16 threads, two a patch
// make shorter ones to even out.
void track_patch(const std::vector<PreparedView>& views, const std::vector<double>& cosines, int reference, int dir,
                 bool slab, std::vector<double>& xs, std::vector<double>& ys) {
    const int n = int(views.size());
    Template t;
    int prev = reference;
    for (int i = reference + dir; i >= 0 && i < n; i += dir) {
        const TrackView& p = views[prev].view;
        if (!patch_fits(p, xs[prev], ys[prev], 1.0, kPatch) || !make_template(p, xs[prev], ys[prev], t)) break;
        const double k = slab ? cosines[i] / cosines[prev] : 1.0;
        double x = predicted_x(xs[prev], k, p.w), y = ys[prev];
        if (!locate(views[i].view, t, k, x, y)) break;
        xs[i] = x, ys[i] = y;
        prev = i;
    }
}

}  // namespace

PatchTracks track_patches(const std::vector<ImageF>& in, const std::vector<double>& tilts, int reference, bool slab) {
    const int n = int(in.size());
    PatchTracks out;
    out.patch_px = kPatch;
    if (n == 0) return out;
    out.width = in.front().width, out.height = in.front().height;
    std::vector<PreparedView> views(n);
    run_tasks(n, [&](int i) { views[i] = prepared(in[i]); });
    const std::vector<double> cosines = track_cosines(tilts);
    const auto starts = track_starts(out.width, out.height);
    out.x.assign(starts.size(), std::vector<double>(n, NAN));
    out.y.assign(starts.size(), std::vector<double>(n, NAN));
    for (std::size_t p = 0; p < starts.size(); ++p) out.x[p][reference] = starts[p].first, out.y[p][reference] = starts[p].second;
    run_tasks(2 * int(starts.size()), [&](int q) {
        track_patch(views, cosines, reference, q % 2 ? -1 : 1, slab, out.x[q / 2], out.y[q / 2]);
    });
    return out;
}

}  // namespace stackalign::cpu
