#include "tilt_axis.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <unsupported/Eigen/FFT>

#include "../core/error.hpp"
#include "band_pass.hpp"
#include "jackknife.hpp"
#include "subpixel.hpp"
#include "tilt_geometry.hpp"

namespace stackalign {
namespace {

// Half the 2D spectrum of an n x n real image: columns 0..n/2 of every
// row, row-major (the other columns are their complex conjugates).
using Spectrum = std::vector<std::complex<double>>;

// The FFT's plans (twiddles) and lines, kept per thread: one correlation
// transforms hundreds of lines, an estimate makes thousands of them.
struct Transforms {
    Eigen::FFT<double> fft{Eigen::FFT<double>::impl_type(), Eigen::FFT<double>::HalfSpectrum};
    std::vector<std::complex<double>> line, out;
};
Transforms& transforms() {
    thread_local Transforms t;
    return t;
}

// Every column of a half spectrum transformed, forward or inverse.
void transform_columns(Spectrum& s, int n, bool inverse) {
    const int h = n / 2 + 1;
    Transforms& t = transforms();
    t.line.resize(n);
    t.out.resize(n);
    for (int k = 0; k < h; ++k) {
        for (int y = 0; y < n; ++y) t.line[y] = s[std::size_t(y) * h + k];
        if (inverse)
            t.fft.inv(t.out.data(), t.line.data(), n);
        else
            t.fft.fwd(t.out.data(), t.line.data(), n);
        for (int y = 0; y < n; ++y) s[std::size_t(y) * h + k] = t.out[y];
    }
}

// The half spectrum of an n x n real image (row-major): each row's real
// transform, then each column's.
Spectrum half_spectrum(const std::vector<double>& image, int n) {
    const int h = n / 2 + 1;
    Spectrum s(std::size_t(n) * h);
    Transforms& t = transforms();
    for (int y = 0; y < n; ++y) t.fft.fwd(&s[std::size_t(y) * h], &image[std::size_t(y) * n], n);
    transform_columns(s, n, false);
    return s;
}

// What is compared: the view's structure (a difference of Gaussians keeps
// edges and texture, drops the slow shading a tilt changes), inside a
// circle tapered to zero at its rim so that no direction is favoured, on
// an n x n grid (n a power of two, the view centred).
struct Prepared {
    Spectrum spectrum;
    double norm = 0;
};

// The tapered circle's weight at each pixel of a w x h view: 1 inside, a
// raised cosine over its outer 8 px, 0 beyond (made once: per comparison,
// its square roots and cosines had cost a sixth of an estimate).
std::vector<double> circle_taper(int w, int h) {
    const double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0, r = std::min(w, h) / 2.0 - 2;
    std::vector<double> taper(std::size_t(w) * h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double d = r - std::hypot(x - cx, y - cy);
            taper[std::size_t(y) * w + x] = d <= 0 ? 0 : d >= 8 ? 1 : 0.5 - 0.5 * std::cos(M_PI * d / 8);
        }
    return taper;
}

Prepared prepare(const std::vector<float>& img, const std::vector<double>& taper, int w, int h, int n) {
    Prepared p;
    std::vector<double> image(std::size_t(n) * n, 0.0);
    const int ox = (n - w) / 2, oy = (n - h) / 2;
    double mean = 0, weight = 0;
    for (std::size_t i = 0; i < img.size(); ++i) {
        mean += taper[i] * img[i];
        weight += taper[i];
    }
    mean /= std::max(weight, 1e-12);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double v = taper[std::size_t(y) * w + x] * (img[std::size_t(y) * w + x] - mean);
            image[std::size_t(y + oy) * n + x + ox] = v;
            p.norm += v * v;
        }
    p.norm = std::sqrt(p.norm);
    p.spectrum = half_spectrum(image, n);
    return p;
}

// out(X) = in(S^-1 (X - c) + c): the view stretched by S about its centre, bilinear.
std::vector<float> stretched(const std::vector<float>& in, int w, int h, const Stretch& s) {
    const double det = s.s[0] * s.s[3] - s.s[1] * s.s[2];
    const double i11 = s.s[3] / det, i12 = -s.s[1] / det, i21 = -s.s[2] / det, i22 = s.s[0] / det;
    const double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0;
    std::vector<float> out(in.size(), 0.0f);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double u = i11 * (x - cx) + i12 * (y - cy) + cx, v = i21 * (x - cx) + i22 * (y - cy) + cy;
            const int x0 = std::clamp(int(std::floor(u)), 0, w - 2), y0 = std::clamp(int(std::floor(v)), 0, h - 2);
            const double fx = std::clamp(u - x0, 0.0, 1.0), fy = std::clamp(v - y0, 0.0, 1.0);
            const float* r0 = &in[std::size_t(y0) * w + x0];
            const float* r1 = r0 + w;
            out[std::size_t(y) * w + x] = float((1 - fy) * ((1 - fx) * r0[0] + fx * r0[1]) + fy * ((1 - fx) * r1[0] + fx * r1[1]));
        }
    return out;
}

// The normalised cross-correlation of a and b at their best shift within
// +-max_lag (a parabola through the peak's neighbours per axis).
double best_correlation(const Prepared& a, const Prepared& b, int n, int max_lag) {
    const int h = n / 2 + 1;
    Spectrum c(a.spectrum.size());
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = a.spectrum[i] * std::conj(b.spectrum[i]);
    transform_columns(c, n, true);
    // Back to the image only the rows of the lags searched and their
    // neighbours: each row's inverse needs no other.
    thread_local std::vector<double> corr;
    corr.resize(std::size_t(n) * n);
    for (int y = 0; y < n; ++y)
        if (std::min(y, n - y) <= max_lag + 1) transforms().fft.inv(&corr[std::size_t(y) * n], &c[std::size_t(y) * h], n);
    auto at = [&](int dx, int dy) { return corr[std::size_t((dy + n) % n) * n + (dx + n) % n]; };
    int bx = 0, by = 0;
    for (int dy = -max_lag; dy <= max_lag; ++dy)
        for (int dx = -max_lag; dx <= max_lag; ++dx)
            if (at(dx, dy) > at(bx, by)) bx = dx, by = dy;
    double peak = at(bx, by);
    const double l = at(bx - 1, by), r = at(bx + 1, by), d = at(bx, by - 1), u = at(bx, by + 1);
    peak += -0.25 * (l - r) * parabolic_offset(l, at(bx, by), r) - 0.25 * (d - u) * parabolic_offset(d, at(bx, by), u);
    return a.norm > 0 && b.norm > 0 ? peak / (a.norm * b.norm) : 0.0;
}

// Common lines, for an object inside the field of view: each view (the
// same tapered circle) projected onto the candidate axis, differentiated;
// every parallel projection of the object gives the same profile there.
std::vector<double> axis_profile(const std::vector<float>& img, const std::vector<double>& taper, int w, int h,
                                 double axis_deg) {
    const double a = axis_deg * M_PI / 180, ux = -std::sin(a), uy = std::cos(a);  // the image y axis turned by a
    const double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0, r = std::min(w, h) / 2.0 - 2;
    const int half = int(std::ceil(r)) + 1;
    std::vector<double> p(2 * half + 2, 0.0);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double t = taper[std::size_t(y) * w + x];
            if (t == 0) continue;
            const double u = (x - cx) * ux + (y - cy) * uy + half;
            const int k = int(std::floor(u));
            const double f = u - k, v = t * img[std::size_t(y) * w + x];
            p[k] += (1 - f) * v;
            p[k + 1] += f * v;
        }
    std::vector<double> out(p.size() - 1);
    for (std::size_t k = 0; k + 1 < p.size(); ++k) out[k] = p[k + 1] - p[k];
    return out;
}

// The largest normalised correlation of two profiles within +-max_lag.
double best_profile_correlation(const std::vector<double>& a, const std::vector<double>& b, int max_lag) {
    const int n = int(a.size());
    std::vector<double> c(2 * max_lag + 1);
    for (int lag = -max_lag; lag <= max_lag; ++lag) {
        double ab = 0, aa = 0, bb = 0;
        for (int i = std::max(0, -lag); i < std::min(n, n - lag); ++i) {
            ab += a[i] * b[i + lag];
            aa += a[i] * a[i];
            bb += b[i + lag] * b[i + lag];
        }
        c[lag + max_lag] = aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
    }
    const int k = int(std::max_element(c.begin(), c.end()) - c.begin());
    if (k == 0 || k + 1 == int(c.size())) return c[k];
    return c[k] - 0.25 * (c[k - 1] - c[k + 1]) * parabolic_offset(c[k - 1], c[k], c[k + 1]);
}

struct Compare {
    std::vector<std::vector<float>> views;  // band-passed
    std::vector<double> tilts;
    int width, height, n, reference, max_lag;
    std::vector<double> taper;  // circle_taper's
    std::vector<Prepared> prepared;  // slab: every view's
    std::vector<int> partner;        // slab: per compared view, the view it is stretched to
    bool slab = true;
    // `ref_profile`: common lines only, the reference's profile at `axis`
    // (made once per axis, not once per view compared with it).
    double score(int view, double axis, const std::vector<double>& ref_profile) const {
        if (!slab) return best_profile_correlation(ref_profile, axis_profile(views[view], taper, width, height, axis), max_lag);
        return stretched_correlation(view, partner[view], axis);
    }
    // The view stretched about the candidate axis into the foreshortening of
    // view `to` (both tilts moved by `offset`), correlated with it.
    double stretched_correlation(int view, int to, double axis, double offset = 0) const {
        const Stretch s = cosine_stretch(tilts[to] + offset, tilts[view] + offset, axis);
        return best_correlation(prepared[to], prepare(stretched(views[view], width, height, s), taper, width, height, n), n,
                                max_lag);
    }
};

// score(a, i) for every candidate a and compared view i, candidate-major,
// on threads.
template <typename Score>
std::vector<std::vector<double>> score_grid(std::size_t candidates, std::size_t views, const Score& score) {
    std::vector<std::vector<double>> out(candidates, std::vector<double>(views));
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (int a = 0; a < int(candidates); ++a)
        for (int i = 0; i < int(views); ++i) out[a][i] = score(a, i);
    return out;
}

std::vector<std::vector<double>> scores(const Compare& c, const std::vector<int>& compared, const std::vector<double>& axes) {
    std::vector<std::vector<double>> ref_profiles(axes.size());
    if (!c.slab) {
#pragma omp parallel for schedule(dynamic, 1)
        for (int a = 0; a < int(axes.size()); ++a)
            ref_profiles[a] = axis_profile(c.views[c.reference], c.taper, c.width, c.height, axes[a]);
    }
    return score_grid(axes.size(), compared.size(),
                      [&](int a, int i) { return c.score(compared[i], axes[a], ref_profiles[a]); });
}

// The vertex of the mean curve over the compared views, one left out (the jackknife) or none (-1).
double vertex(const std::vector<double>& axes, const std::vector<std::vector<double>>& c, int leave_out) {
    std::vector<double> mean(axes.size(), 0.0);
    for (std::size_t a = 0; a < axes.size(); ++a)
        for (std::size_t i = 0; i < c[a].size(); ++i)
            if (int(i) != leave_out) mean[a] += c[a][i];
    const int k = int(std::max_element(mean.begin(), mean.end()) - mean.begin());
    if (k == 0 || k + 1 == int(mean.size())) return axes[k];
    return axes[k] + parabolic_offset(mean[k - 1], mean[k], mean[k + 1]) * (axes[k + 1] - axes[k]);
}

double wrap_axis(double deg) {  // an axis and its opposite are one axis: (-90, 90]
    while (deg > 90) deg -= 180;
    while (deg <= -90) deg += 180;
    return deg;
}

// The view a slab's view `view` is compared with: the one on its side of
// the reference whose tilt is nearest `gap` degrees nearer the reference's
// (at least one view nearer; the reference itself at most).
int stretch_partner(const std::vector<double>& tilts, int reference, int view, double gap) {
    const double from = tilts[view] - tilts[reference];
    const double want = tilts[view] - std::copysign(gap, from);
    int best = reference;
    for (int j = 0; j < int(tilts.size()); ++j) {
        const double d = tilts[j] - tilts[reference];
        if (j == view || d * from < 0 || std::fabs(d) >= std::fabs(from)) continue;
        if (std::fabs(tilts[j] - want) < std::fabs(tilts[best] - want)) best = j;
    }
    return best;
}

// The farther a partner, the more the stretch shows the axis; but a thick
// slab's layers drift apart by their depth x sin(tilt), so its views stop
// looking alike. Each view keeps the farthest partner (the gap doubled from
// kPartnerGap up to the reference) that correlates, at the coarse axis, at
// least kAlike times as well as the nearest. On the bench's slab (a fifth
// of the field deep, 121 views over +-60 degrees) the views correlated
// 0.90-0.96 with the view 5 degrees nearer and 0.31-0.76 with the
// reference; compared with the reference alone, the axis landed 82-97
// degrees from the truth (`python3 bench/tilt_accuracy.py --cases slab
// slab-oblique --variants 'auto=tilt_axis = "auto"'`).
constexpr double kPartnerGap = 5.0;
constexpr double kOffsetReach = 10.0;  // degrees: tilt_offset = "auto" looks this far
constexpr double kAlike = 0.9;
// The fine passes' candidates either side of the coarse vertex: 8 steps
// (1.6 degrees for the axis, 0.8 for the offset) reach past half a coarse
// step, and a pass whose best is at an end moves on. With 15 a side the
// fine passes were most of both estimates' time.
constexpr int kFineHalf = 8;
void farthest_alike_partners(Compare& c, const std::vector<int>& compared, double axis) {
#pragma omp parallel for schedule(dynamic, 1)
    for (int k = 0; k < int(compared.size()); ++k) {
        const int i = compared[k];
        const double nearest = c.stretched_correlation(i, c.partner[i], axis);
        for (double gap = 2 * kPartnerGap; c.partner[i] != c.reference; gap *= 2) {
            const int p = stretch_partner(c.tilts, c.reference, i, gap);
            if (c.stretched_correlation(i, p, axis) < kAlike * nearest) break;
            c.partner[i] = p;
        }
    }
}

// Views that foreshorten little against the reference barely depend on
// the axis or the offset: they would add noise, not information.
std::vector<int> compared_views(const std::vector<double>& tilts, int reference, const char* key) {
    std::vector<int> compared;
    const double c_ref = std::cos(tilts[reference] * M_PI / 180);
    for (int i = 0; i < int(tilts.size()); ++i)
        if (i != reference && std::cos(tilts[i] * M_PI / 180) < 0.95 * c_ref && std::cos(tilts[i] * M_PI / 180) > 0.2)
            compared.push_back(i);
    if (compared.size() < 2)
        throw InputError(std::string(key) + " = \"auto\": fewer than two views are tilted far enough from the reference "
                         "(cosines 5-80 % below its own) to show it; give " + key + " in degrees");
    return compared;
}

Compare compare_views(const std::vector<ImageF>& views, const std::vector<double>& tilts, int reference, int max_lag,
                      bool slab, const std::vector<int>& compared) {
    Compare c;
    c.width = views[0].width, c.height = views[0].height;
    c.n = 1;
    // No padding for the lags: the circle's taper leaves the grid's rim
    // empty, so what wraps around at a few pixels' lag is nearly nothing.
    while (c.n < std::max(c.width, c.height)) c.n *= 2;
    c.views.resize(views.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < int(views.size()); ++i) c.views[i] = band_pass(views[i]);
    c.tilts = tilts, c.reference = reference, c.max_lag = max_lag, c.slab = slab;
    c.taper = circle_taper(c.width, c.height);
    if (slab) {
        c.prepared.resize(views.size());
#pragma omp parallel for schedule(dynamic, 1)
        for (int i = 0; i < int(views.size()); ++i) c.prepared[i] = prepare(c.views[i], c.taper, c.width, c.height, c.n);
        c.partner.assign(views.size(), reference);
        for (int i : compared) c.partner[i] = stretch_partner(tilts, reference, i, kPartnerGap);
    }
    return c;
}

// The jackknife's standard error of the vertex of the mean curve `s`
// (candidates x views) over `candidates`: the vertex with each view left out in turn.
double vertex_error(const std::vector<double>& candidates, const std::vector<std::vector<double>>& s) {
    const int n = s.empty() ? 0 : int(s[0].size());
    std::vector<double> left(n);
    for (int i = 0; i < n; ++i) left[i] = vertex(candidates, s, i);
    return jackknife_error(left);
}

// A fine pass: 2 kFineHalf + 1 candidates `step` apart about `centre`,
// scored by `score_at(candidates)` (candidates x views), moved on while
// the vertex of their mean is at an end (at most 6 times; the centre kept
// within +-limit, and no move once it is there).
struct FinePass {
    std::vector<double> at;
    std::vector<std::vector<double>> scores;
    double found = 0;
};
template <typename ScoreAt>
FinePass fine_pass(double centre, double step, double limit, const ScoreAt& score_at) {
    FinePass f;
    for (int tries = 0; tries < 6; ++tries) {
        f.at.clear();
        for (int k = -kFineHalf; k <= kFineHalf; ++k) f.at.push_back(centre + step * k);
        f.scores = score_at(f.at);
        f.found = vertex(f.at, f.scores, -1);
        if ((f.found > f.at.front() && f.found < f.at.back()) || std::fabs(centre) >= limit) break;
        centre = std::clamp(f.found + (f.found == f.at.front() ? -step : step) * (kFineHalf - 1), -limit, limit);
    }
    return f;
}

// A coarse pass only has to land near the peak: 8 of the compared views,
// spread over them, are enough (a fine pass that finds its best at an end
// moves on).
std::vector<int> spread(const std::vector<int>& compared) {
    const int k = std::min<int>(8, int(compared.size()));
    std::vector<int> few;
    for (int j = 0; j < k; ++j) few.push_back(compared[std::size_t(j) * compared.size() / k]);
    return few;
}

}  // namespace

TiltAxisEstimate estimate_tilt_axis(const std::vector<ImageF>& views, const std::vector<double>& tilts, int reference,
                                    int max_lag, bool slab) {
    const std::vector<int> compared = compared_views(tilts, reference, "tilt_axis");
    Compare c = compare_views(views, tilts, reference, max_lag, slab, compared);

    const std::vector<int> few = spread(compared);
    std::vector<double> coarse;
    for (double a = -87; a <= 90; a += 3) coarse.push_back(a);
    const double best = vertex(coarse, scores(c, few, coarse), -1);
    if (slab) farthest_alike_partners(c, compared, best);
    // The fine pass moves on while its best is at an end: the coarse pass
    // looks at 8 views only, and its best can lie beyond 3 degrees.
    const FinePass fine = fine_pass(best, 0.2, HUGE_VAL,
                                    [&](const std::vector<double>& axes) { return scores(c, compared, axes); });
    TiltAxisEstimate e;
    e.views = int(compared.size());
    e.axis_deg = wrap_axis(fine.found);
    e.standard_error = vertex_error(fine.at, fine.scores);
    e.angles = fine.at;
    const int n = e.views;
    for (const auto& row : fine.scores) {
        double sum = 0;
        for (double v : row) sum += v;
        e.scores.push_back(sum / n);
    }
    return e;
}

TiltOffsetEstimate estimate_tilt_offset(const std::vector<ImageF>& views, const std::vector<double>& tilts,
                                        int reference, int max_lag, double axis_deg) {
    const std::vector<int> compared = compared_views(tilts, reference, "tilt_offset");
    Compare c = compare_views(views, tilts, reference, max_lag, true, compared);
    farthest_alike_partners(c, compared, axis_deg);
    auto scores_at = [&](const std::vector<double>& offsets, const std::vector<int>& views) {
        return score_grid(offsets.size(), views.size(), [&](int a, int i) {
            return c.stretched_correlation(views[i], c.partner[views[i]], axis_deg, offsets[a]);
        });
    };
    // Offsets that keep every compared view short of edge-on.
    double most = 0;
    for (int i : compared) most = std::max(most, std::fabs(tilts[i]));
    const double reach = std::min(kOffsetReach, 85.0 - most);
    std::vector<double> coarse;
    for (double d = -reach; d <= reach + 1e-9; d += 1.0) coarse.push_back(d);
    const double best = vertex(coarse, scores_at(coarse, spread(compared)), -1);
    const FinePass fine =
        fine_pass(best, 0.1, reach, [&](const std::vector<double>& offsets) { return scores_at(offsets, compared); });
    TiltOffsetEstimate e;
    e.views = int(compared.size());
    e.offset_deg = fine.found;
    e.standard_error = vertex_error(fine.at, fine.scores);
    e.at_edge = fine.found <= fine.at.front() || fine.found >= fine.at.back() || std::fabs(fine.found) >= reach;
    return e;
}

}  // namespace stackalign

