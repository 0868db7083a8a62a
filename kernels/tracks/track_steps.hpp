// The steps of following one patch from view to view (patch_tracks.hpp),
// each written once for both twins. The CPU runs them one after another;
// the GPU gives each (patch, direction) a block whose threads share a step's
// samples and rows. Every sum runs in one fixed order: along a row of 32
// samples, then over the rows (the row totals are what a GPU block's
// threads make side by side), with no FMA contraction (the Makefile's
// -ffp-contract=off / -fmad=false), so both twins follow every patch to the
// same bits.
#pragma once
#include <cmath>
#include <cstddef>

#include "../../src/core/host_device.hpp"

namespace stackalign::tracks {

constexpr int kPatch = 32;                   // pixels a side
constexpr int kArea = kPatch * kPatch;
constexpr int kSearch = 2;                   // whole pixels searched about the predicted place
constexpr int kWide = kPatch + 2 * kSearch;  // the whole-pixel search samples one patch this much larger a side
constexpr int kPlaces = (2 * kSearch + 1) * (2 * kSearch + 1);
constexpr int kNewtonSteps = 8;              // sub-pixel steps (Lucas-Kanade) at most
constexpr double kMinCorrelation = 0.5;      // below it a patch is lost, and its track ends
constexpr int kClear = 4;                    // pixels kept clear of a view's missing data (the band-pass's reach)
// The views' band (Gaussians of these sigmas, px, subtracted), the first
// estimate's. With 6 in place of 4 the whole object of `python3
// bench/tilt_accuracy.py` came out 0.14-0.30 degrees off (0.02-0.08 with
// 4), the slab at 84 degrees 0.08-0.21.
constexpr double kBandFine = 1.0, kBandCoarse = 4.0;

// A view as the tracks see it: band-passed (missing data as the view's
// mean) and where the band-pass saw no missing data.
struct TrackView {
    int w = 0, h = 0;
    const float* band = nullptr;
    const unsigned char* clear = nullptr;
    STACKALIGN_HD bool ok(int x, int y) const {
        return x >= 0 && y >= 0 && x < w && y < h && clear[std::size_t(y) * w + x];
    }
};

// Keys' cubic convolution kernel (a = -1/2) and its slope: sub-pixel samples
// and their gradient from the same interpolant.
STACKALIGN_HD inline double keys(double x) {
    x = fabs(x);
    if (x < 1) return (1.5 * x - 2.5) * x * x + 1;
    if (x < 2) return ((-0.5 * x + 2.5) * x - 4) * x + 2;
    return 0;
}
STACKALIGN_HD inline double keys_slope(double x) {
    const double s = x < 0 ? -1 : 1;
    x = fabs(x);
    if (x < 1) return s * (4.5 * x - 5) * x;
    if (x < 2) return s * ((-1.5 * x + 5) * x - 4);
    return 0;
}

// A patch's sample offsets about its centre: i - (side - 1) / 2.
STACKALIGN_HD inline double offset_of(int i, int side) { return i - (side - 1) / 2.0; }

// Whether every tap of a patch centred at (cx, cy) (grid pixels), stretched
// by k across, lies where the view has data. The clear region is convex
// per view (a frame's footprint on the grid), so its corners decide.
STACKALIGN_HD inline bool patch_fits(const TrackView& v, double cx, double cy, double k, int side) {
    const double x0 = cx + k * offset_of(0, side), x1 = cx + k * offset_of(side - 1, side);
    const double y0 = cy + offset_of(0, side), y1 = cy + offset_of(side - 1, side);
    const int ax = int(floor(x0 < x1 ? x0 : x1)) - 1, bx = int(floor(x0 < x1 ? x1 : x0)) + 2;
    const int ay = int(floor(y0)) - 1, by = int(floor(y1)) + 2;
    return v.ok(ax, ay) && v.ok(bx, ay) && v.ok(ax, by) && v.ok(bx, by);
}

// The vertical phase every row of a patch shares (rows are whole pixels apart).
struct RowPhase {
    int y0 = 0;
    double wy[4], dy[4];
};
STACKALIGN_HD inline RowPhase row_phase(double cy, int side) {
    RowPhase p;
    const double y = cy + offset_of(0, side);
    p.y0 = int(floor(y));
    const double ty = y - p.y0;
    for (int a = 0; a < 4; ++a) p.wy[a] = keys(ty - (a - 1)), p.dy[a] = keys_slope(ty - (a - 1));
    return p;
}
// Column i's phase: its first tap's pixel and its horizontal weights (a
// stretched patch's columns each have their own).
struct ColumnPhase {
    int x0 = 0;
    double wx[4], dx[4];
};
STACKALIGN_HD inline ColumnPhase column_phase(double cx, double k, int i, int side) {
    ColumnPhase c;
    const double x = cx + k * offset_of(i, side);
    c.x0 = int(floor(x));
    const double tx = x - c.x0;
    for (int b = 0; b < 4; ++b) c.wx[b] = keys(tx - (b - 1)), c.dx[b] = keys_slope(tx - (b - 1));
    return c;
}
// The vertical taps of row j at pixel column q (and their slope).
STACKALIGN_HD STACKALIGN_INLINE double column_value(const TrackView& v, const RowPhase& p, int j, int q) {
    const float* r0 = v.band + std::size_t(p.y0 + j - 1) * v.w + q;
    const float *r1 = r0 + v.w, *r2 = r1 + v.w, *r3 = r2 + v.w;
    return p.wy[0] * r0[0] + p.wy[1] * r1[0] + p.wy[2] * r2[0] + p.wy[3] * r3[0];
}
STACKALIGN_HD STACKALIGN_INLINE double column_slope(const TrackView& v, const RowPhase& p, int j, int q) {
    const float* r0 = v.band + std::size_t(p.y0 + j - 1) * v.w + q;
    const float *r1 = r0 + v.w, *r2 = r1 + v.w, *r3 = r2 + v.w;
    return p.dy[0] * r0[0] + p.dy[1] * r1[0] + p.dy[2] * r2[0] + p.dy[3] * r3[0];
}
// A sample from four column values c (taps x0 - 1 .. x0 + 2) and its x slope.
STACKALIGN_HD inline float horizontal(const double w[4], const double c[4]) {
    return float(w[0] * c[0] + w[1] * c[1] + w[2] * c[2] + w[3] * c[3]);
}
// Sample (i, j) of a patch, and where asked its x and y slopes.
STACKALIGN_HD inline void patch_sample(const TrackView& v, const RowPhase& p, const ColumnPhase& c, int j, float* f,
                                       float* gx, float* gy) {
    double col[4];
    for (int b = 0; b < 4; ++b) col[b] = column_value(v, p, j, c.x0 - 1 + b);
    *f = horizontal(c.wx, col);
    if (gx) {
        double d[4];
        for (int b = 0; b < 4; ++b) d[b] = column_slope(v, p, j, c.x0 - 1 + b);
        *gx = horizontal(c.dx, col);
        *gy = horizontal(c.wx, d);
    }
}

// Row j's total of a kPatch-wide window at row stride `stride`.
STACKALIGN_HD inline double row_total(const float* f, int stride, int j) {
    double s = 0;
    for (int i = 0; i < kPatch; ++i) s += f[j * stride + i];
    return s;
}
// Row j's share of a correlation: sum of squares about the window's mean
// m, and the template's product with it.
STACKALIGN_HD inline void correlation_row(const float* t, const float* f, int stride, int j, double m, double* ss,
                                          double* st) {
    double a = 0, b = 0;
    for (int i = 0; i < kPatch; ++i) {
        const double d = f[j * stride + i] - m;
        a += d * d, b += t[j * kPatch + i] * d;
    }
    *ss = a, *st = b;
}
// Row j's sum of squares about m.
STACKALIGN_HD inline double centred_squares(const float* f, int j, double m) {
    double s = 0;
    for (int i = 0; i < kPatch; ++i) {
        const double d = f[j * kPatch + i] - m;
        s += d * d;
    }
    return s;
}
// Sample q of a template made unit: mean m removed, scaled by n (its slopes too).
STACKALIGN_HD inline void normalise(float* t, float* tx, float* ty, int q, double m, double n) {
    t[q] = float((t[q] - m) * n), tx[q] = float(tx[q] * n), ty[q] = float(ty[q] * n);
}
// The correlation of the unit template with a window, from its row sums.
STACKALIGN_HD inline double correlation_of(double ss, double st) { return ss > 1e-20 ? st / sqrt(ss) : 0.0; }

// The template's design row a = (t, 1, -tx, -ty) of sample q.
STACKALIGN_HD inline void design(const float* t, const float* tx, const float* ty, int q, double a[4]) {
    a[0] = t[q], a[1] = 1.0, a[2] = -double(tx[q]), a[3] = -double(ty[q]);
}
// Row j's share of the template's normal matrix sum a a^T (16 entries).
STACKALIGN_HD inline void normal_row(const float* t, const float* tx, const float* ty, int j, double h[16]) {
    for (int e = 0; e < 16; ++e) h[e] = 0;
    for (int i = 0; i < kPatch; ++i) {
        double a[4];
        design(t, tx, ty, j * kPatch + i, a);
        for (int r = 0; r < 4; ++r)
            for (int c = 0; c < 4; ++c) h[r * 4 + c] += a[r] * a[c];
    }
}
// Row j's share of a Gauss-Newton step's right side, sum a f.
STACKALIGN_HD inline void step_row(const float* t, const float* tx, const float* ty, const float* f, int j,
                                   double r[4]) {
    for (int e = 0; e < 4; ++e) r[e] = 0;
    for (int i = 0; i < kPatch; ++i) {
        double a[4];
        design(t, tx, ty, j * kPatch + i, a);
        for (int e = 0; e < 4; ++e) r[e] += a[e] * double(f[j * kPatch + i]);
    }
}

// Cholesky factor of a symmetric 4 x 4 matrix (row-major, lower triangle
// into l); false where it is not positive definite (a flat patch).
STACKALIGN_HD inline bool cholesky4(const double h[16], double l[16]) {
    for (int e = 0; e < 16; ++e) l[e] = 0;
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c <= r; ++c) {
            double s = h[r * 4 + c];
            for (int k = 0; k < c; ++k) s -= l[r * 4 + k] * l[c * 4 + k];
            if (r == c) {
                if (!(s > 1e-300)) return false;
                l[r * 4 + r] = sqrt(s);
            } else {
                l[r * 4 + c] = s / l[c * 4 + c];
            }
        }
    return true;
}
STACKALIGN_HD inline void solve4(const double l[16], const double b[4], double x[4]) {
    double y[4];
    for (int r = 0; r < 4; ++r) {
        double s = b[r];
        for (int k = 0; k < r; ++k) s -= l[r * 4 + k] * y[k];
        y[r] = s / l[r * 4 + r];
    }
    for (int r = 3; r >= 0; --r) {
        double s = y[r];
        for (int k = r + 1; k < 4; ++k) s -= l[k * 4 + r] * x[k];
        x[r] = s / l[r * 4 + r];
    }
}

// What one Gauss-Newton step moves the patch by, from the solution s of
// f = alpha t + beta - g . (alpha d): alpha d in the template's pixels
// (across, the view's are k of them), each clamped to a pixel; false where
// the step is not usable (the patch's contrast gone or reversed).
STACKALIGN_HD inline bool newton_move(const double s[4], double k, double* ddx, double* ddy) {
    bool finite = true;
    for (int e = 0; e < 4; ++e) finite = finite && s[e] - s[e] == 0.0;  // NaN and infinities give NaN
    if (!finite || !(s[0] > 1e-6)) return false;
    const double x = k * s[2] / s[0], y = s[3] / s[0];
    *ddx = x < -1.0 ? -1.0 : (x > 1.0 ? 1.0 : x);
    *ddy = y < -1.0 ? -1.0 : (y > 1.0 ? 1.0 : y);
    return true;
}

// Whether a step was small enough to stop at.
STACKALIGN_HD inline bool settled(double ddx, double ddy) { return fabs(ddx) < 1e-3 && fabs(ddy) < 1e-3; }
// Whether the steps took a patch more than 1.5 px from its whole-pixel
// place: a patch that slid off to other content.
STACKALIGN_HD inline bool too_far(double dx, double dy) { return dx * dx + dy * dy > 2.25; }

// Where a patch of view `prev` at (px, py) is first sought in the next
// view: foreshortened about the axis (the grid's centre column) for a slab.
STACKALIGN_HD inline double predicted_x(double px, double k, int w) {
    const double c = (w - 1) / 2.0;
    return c + (px - c) * k;
}

}  // namespace stackalign::tracks
