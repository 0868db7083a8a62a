#include "tilt_axis.hpp"

#include <algorithm>
#include <cmath>

#include "../core/error.hpp"
#include "band_pass.hpp"
#include "jackknife.hpp"
#include "subpixel.hpp"
#include "tilt_geometry.hpp"

namespace stackalign {
namespace {

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
    int width, height, reference, max_lag;
    std::vector<double> taper;                   // common lines: circle_taper's
    std::unique_ptr<ViewCorrelator> correlator;  // slab
    std::vector<int> partner;                    // slab: per compared view, the view it is stretched to
    bool slab = true;
    // The view stretched about the candidate axis into the foreshortening of
    // view `to` (both tilts moved by `offset`), to be correlated with it.
    StretchedPair pair(int view, int to, double axis, double offset = 0) const {
        return {view, to, cosine_stretch(tilts[to] + offset, tilts[view] + offset, axis)};
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

// The slab's pair(a, i) for every candidate a and compared view i,
// correlated in one batch, candidate-major.
template <typename PairAt>
std::vector<std::vector<double>> correlate_grid(Compare& c, std::size_t candidates, std::size_t views,
                                                const PairAt& pair_at) {
    std::vector<StretchedPair> pairs;
    pairs.reserve(candidates * views);
    for (std::size_t a = 0; a < candidates; ++a)
        for (std::size_t i = 0; i < views; ++i) pairs.push_back(pair_at(int(a), int(i)));
    const std::vector<double> flat = c.correlator->correlate(pairs);
    std::vector<std::vector<double>> out(candidates);
    for (std::size_t a = 0; a < candidates; ++a) out[a].assign(flat.begin() + a * views, flat.begin() + (a + 1) * views);
    return out;
}

std::vector<std::vector<double>> scores(Compare& c, const std::vector<int>& compared, const std::vector<double>& axes) {
    if (c.slab)
        return correlate_grid(c, axes.size(), compared.size(), [&](int a, int i) {
            return c.pair(compared[i], c.partner[compared[i]], axes[a]);
        });
    // Common lines: the reference's profile made once per axis, not once per view compared with it.
    std::vector<std::vector<double>> ref_profiles(axes.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int a = 0; a < int(axes.size()); ++a)
        ref_profiles[a] = axis_profile(c.views[c.reference], c.taper, c.width, c.height, axes[a]);
    return score_grid(axes.size(), compared.size(), [&](int a, int i) {
        return best_profile_correlation(ref_profiles[a],
                                        axis_profile(c.views[compared[i]], c.taper, c.width, c.height, axes[a]),
                                        c.max_lag);
    });
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

// An estimate kept to 1e-6 degrees, far below its error (0.01 and more):
// the CPU's and the GPU's transforms round differently in the last bits
// (kernels/view_correlation), and the same angle keeps every later stage
// the same on both backends.
double kept_angle(double deg) { return std::round(deg * 1e6) / 1e6; }

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
// least kAlike times as well as the nearest (the offset: kOffsetAlike). On
// the bench's slab (a fifth of the field deep, 121 views over +-60 degrees)
// the views correlated 0.90-0.96 with the view 5 degrees nearer and
// 0.31-0.76 with the reference; compared with the reference alone, the
// axis landed 82-97 degrees from the truth (`python3
// bench/tilt_accuracy.py --cases slab slab-oblique --variants
// 'auto=tilt_axis = "auto"'`).
constexpr double kPartnerGap = 5.0;
// Degrees tilt_offset = "auto" looks either side of 0: at 10, the coarse
// pass over the 256 px views of the bench's slab at a +2 degree stage
// offset scored best at its end, +10, and no peak was found; at 15 the
// estimate is +7.7 with the axis's partners, +9.5 with the offset's (the
// stretch that serves the pairs, not the stage's +2: docs/tomography.md).
constexpr double kOffsetReach = 15.0;
constexpr double kAlike = 0.9;
// The offset's partners may be farther: at 0.8 of the nearest's
// correlation, not 0.9, the estimate moves 1-2 degrees up and the pairs
// stretched by it come out nearer the truth on all 12 of the bench's slab
// series at 1000 photons (three seeds of the slab, at a +2 degree stage
// offset, at axis 84 and of flat layers): 0.084-0.134 px -> 0.072-0.118;
// at 0.7 the fish slabs went back up to 0.081-0.103 (`python3
// bench/tilt_accuracy.py --cases slab slab-offset slab-oblique slab-layers
// --noise 1000 --seed S --no-reference --variants defaults`, S = 7, 8, 9).
// What it finds is the stretch that serves the pairs, not the stage's
// zero (docs/tomography.md, Tilt offset).
constexpr double kOffsetAlike = 0.8;
// The fine passes' candidates either side of the coarse vertex: 8 steps
// (1.6 degrees for the axis, 0.8 for the offset) reach past half a coarse
// step, and a pass whose best is at an end moves on. With 15 a side the
// fine passes were most of both estimates' time.
constexpr int kFineHalf = 8;

// Each compared view's partner moved out while it correlates at least
// `alike` times as well as the nearest (kAlike for the axis, kOffsetAlike
// for the offset).
void farthest_alike_partners(Compare& c, const std::vector<int>& compared, double axis, double alike) {
    std::vector<StretchedPair> pairs;
    for (int i : compared) pairs.push_back(c.pair(i, c.partner[i], axis));
    const std::vector<double> nearest_scores = c.correlator->correlate(pairs);
    std::vector<double> nearest(c.views.size());
    std::vector<int> open;  // views whose partner may still move out
    for (std::size_t k = 0; k < compared.size(); ++k) {
        nearest[compared[k]] = nearest_scores[k];
        if (c.partner[compared[k]] != c.reference) open.push_back(compared[k]);
    }
    // Each round tries every open view's partner at the doubled gap, in one batch.
    for (double gap = 2 * kPartnerGap; !open.empty(); gap *= 2) {
        std::vector<int> farther;
        pairs.clear();
        for (int i : open) {
            farther.push_back(stretch_partner(c.tilts, c.reference, i, gap));
            pairs.push_back(c.pair(i, farther.back(), axis));
        }
        const std::vector<double> s = c.correlator->correlate(pairs);
        std::vector<int> still;
        for (std::size_t k = 0; k < open.size(); ++k) {
            if (s[k] < alike * nearest[open[k]]) continue;
            c.partner[open[k]] = farther[k];
            if (farther[k] != c.reference) still.push_back(open[k]);
        }
        open = std::move(still);
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
                      bool slab, const std::vector<int>& compared, const MakeViewCorrelator& make_correlator) {
    Compare c;
    c.width = views[0].width, c.height = views[0].height;
    c.views.resize(views.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < int(views.size()); ++i) c.views[i] = band_pass(views[i]);
    c.tilts = tilts, c.reference = reference, c.max_lag = max_lag, c.slab = slab;
    if (slab) {
        c.correlator = make_correlator(c.views, c.width, c.height, max_lag);
        c.partner.assign(views.size(), reference);
        for (int i : compared) c.partner[i] = stretch_partner(tilts, reference, i, kPartnerGap);
    } else {
        c.taper = circle_taper(c.width, c.height);
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
                                    int max_lag, bool slab, const MakeViewCorrelator& correlator) {
    const std::vector<int> compared = compared_views(tilts, reference, "tilt_axis");
    Compare c = compare_views(views, tilts, reference, max_lag, slab, compared, correlator);

    const std::vector<int> few = spread(compared);
    std::vector<double> coarse;
    for (double a = -87; a <= 90; a += 3) coarse.push_back(a);
    const double best = vertex(coarse, scores(c, few, coarse), -1);
    if (slab) farthest_alike_partners(c, compared, best, kAlike);
    // The fine pass moves on while its best is at an end: the coarse pass
    // looks at 8 views only, and its best can lie beyond 3 degrees.
    const FinePass fine = fine_pass(best, 0.2, HUGE_VAL,
                                    [&](const std::vector<double>& axes) { return scores(c, compared, axes); });
    TiltAxisEstimate e;
    e.views = int(compared.size());
    e.axis_deg = kept_angle(wrap_axis(fine.found));
    e.standard_error = kept_angle(vertex_error(fine.at, fine.scores));
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
                                        int reference, int max_lag, double axis_deg,
                                        const MakeViewCorrelator& correlator, const std::vector<ImageF>& finer,
                                        int finer_lag) {
    const std::vector<int> compared = compared_views(tilts, reference, "tilt_offset");
    Compare c = compare_views(views, tilts, reference, max_lag, true, compared, correlator);
    farthest_alike_partners(c, compared, axis_deg, kOffsetAlike);
    auto scores_at = [&](Compare& on, const std::vector<double>& offsets, const std::vector<int>& views) {
        return correlate_grid(on, offsets.size(), views.size(), [&](int a, int i) {
            return on.pair(views[i], on.partner[views[i]], axis_deg, offsets[a]);
        });
    };
    // Offsets that keep every compared view short of edge-on.
    double most = 0;
    for (int i : compared) most = std::max(most, std::fabs(tilts[i]));
    const double reach = std::min(kOffsetReach, 85.0 - most);
    std::vector<double> coarse;
    for (double d = -reach; d <= reach + 1e-9; d += 1.0) coarse.push_back(d);
    const double best = vertex(coarse, scores_at(c, coarse, spread(compared)), -1);
    auto fine_on = [&](Compare& on, double centre) {
        return fine_pass(centre, 0.1, reach,
                         [&](const std::vector<double>& offsets) { return scores_at(on, offsets, compared); });
    };
    FinePass fine = fine_on(c, best);
    if (!finer.empty()) {
        // Partners chosen again: which views still look alike depends on
        // the detail compared (with the coarser views' partners the bench's
        // slab at a +2 degree stage offset went to +9.6, from +7.7).
        c = Compare{};  // its correlator's memory, before the finer one's
        Compare f = compare_views(finer, tilts, reference, finer_lag, true, compared, correlator);
        farthest_alike_partners(f, compared, axis_deg, kOffsetAlike);
        fine = fine_on(f, fine.found);
    }
    TiltOffsetEstimate e;
    e.views = int(compared.size());
    e.offset_deg = kept_angle(fine.found);
    e.standard_error = kept_angle(vertex_error(fine.at, fine.scores));
    e.at_edge = fine.found <= fine.at.front() || fine.found >= fine.at.back() || std::fabs(fine.found) >= reach;
    return e;
}

}  // namespace stackalign
