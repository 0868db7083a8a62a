#include "sine_mode.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stackalign {
namespace {

// Catmull-Rom interpolation of f at t, its ends held beyond them.
double cubic_at(const std::vector<double>& f, double t) {
    const int n = int(f.size());
    const int i = int(std::floor(t));
    const double u = t - i;
    auto at = [&](int k) { return f[std::clamp(k, 0, n - 1)]; };
    const double p0 = at(i - 1), p1 = at(i), p2 = at(i + 1), p3 = at(i + 2);
    return p1 + 0.5 * u * (p2 - p0 + u * (2 * p0 - 5 * p1 + 4 * p2 - p3 + u * (3 * (p1 - p2) + p3 - p0)));
}

}  // namespace

double row_sum_shift(const float* reference, const float* view, const AxisGrid& grid, const GridRect& r, int reach) {
    const int n = r.height;
    std::vector<double> mine(n, 0.0), theirs(n, 0.0);
    for (int y = 0; y < n; ++y)
        for (int x = r.x; x < r.x + r.width; ++x) {
            const std::size_t at = std::size_t(r.y + y) * grid.width + x;
            mine[y] += view[at], theirs[y] += reference[at];
        }
    // The correlation of the view's sums at y + s/2 with the reference's
    // at y - s/2, over the rows both keep whole.
    auto correlation = [&](double s) {
        const int lo = int(std::ceil(std::fabs(s) / 2)) + 2, hi = n - lo;
        double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
        int m = 0;
        for (int y = lo; y < hi; ++y) {
            const double a = cubic_at(mine, y + s / 2), b = cubic_at(theirs, y - s / 2);
            sa += a, sb += b, saa += a * a, sbb += b * b, sab += a * b, ++m;
        }
        if (m < 3) return -1.0;
        const double va = saa - sa * sa / m, vb = sbb - sb * sb / m;
        return va > 0 && vb > 0 ? (sab - sa * sb / m) / std::sqrt(va * vb) : -1.0;
    };
    int best = 0;
    double top = correlation(0);
    for (int s = -reach; s <= reach; ++s) {
        const double c = correlation(s);
        if (c > top) top = c, best = s;
    }
    // A golden-section search within a row of the best whole shift: the
    // interval shrinks to 0.618^30 of 2 rows, far under a hundredth.
    constexpr double kGolden = 0.6180339887498949;
    double lo = best - 1.0, hi = best + 1.0;
    double a = hi - kGolden * (hi - lo), b = lo + kGolden * (hi - lo);
    double ca = correlation(a), cb = correlation(b);
    for (int it = 0; it < 30; ++it) {
        if (ca < cb) lo = a, a = b, ca = cb, b = lo + kGolden * (hi - lo), cb = correlation(b);
        else hi = b, b = a, cb = ca, a = hi - kGolden * (hi - lo), ca = correlation(a);
    }
    return (lo + hi) / 2;
}

SineFit fit_sine(const std::vector<double>& angles_deg, const std::vector<double>& moves) {
    const std::size_t n = moves.size();
    if (angles_deg.size() != n || n < 3) throw std::invalid_argument("fit_sine: needs at least three angles and moves, as many of each");
    double ms = 0, mm = 0;
    for (std::size_t i = 0; i < n; ++i) ms += std::sin(angles_deg[i] * M_PI / 180), mm += moves[i];
    ms /= double(n), mm /= double(n);
    double ss = 0, sm = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double s = std::sin(angles_deg[i] * M_PI / 180) - ms;
        ss += s * s, sm += s * (moves[i] - mm);
    }
    if (ss < 1e-12) throw std::invalid_argument("fit_sine: the angles do not spread in sin t");
    SineFit f;
    f.c1 = sm / ss;
    f.c0 = mm - f.c1 * ms;
    double rr = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double r = moves[i] - f.c0 - f.c1 * std::sin(angles_deg[i] * M_PI / 180);
        rr += r * r;
    }
    f.c1_error = std::sqrt(rr / double(n - 2) / ss);
    return f;
}

}  // namespace stackalign
