#include "specimen_tilt.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <utility>

#include "jackknife.hpp"
#include "robust_weights.hpp"

namespace stackalign {
namespace {

constexpr double kRangeDeg = 20;    // candidate offsets, either way
constexpr double kStepDeg = 0.1;
constexpr double kBinPx = 0.25;     // the depths' histogram
constexpr double kSigmaPx = 1.0;    // its smoothing: about a segment point's depth error
constexpr double kPeakShare = 0.2;  // a layer's peak, against the highest
constexpr double kLayerPx = 3.0;    // a point belongs to the nearest peak this near
constexpr int kGroups = 20;
// The points are taken for planes where content could tilt them by at
// most this much (the content bound, degrees): one layer 0.12, two layers
// 38 px apart 0.53, the 8-px slab 0.60; three layers 19 px apart 1.1, the
// thick slabs 1.2-1.3, whose patches slide between depths (`python3
// bench/tilt_accuracy.py --cases slab-layer1 slab-layers2 slab-thin
// slab-layers3 slab-layers slab slab-wide --noise 1000 --no-reference
// --variants defaults`, 256 px).
constexpr double kPlanarBoundDeg = 1.0;
constexpr int kRobustRounds = 3;

double radians(double deg) { return deg * M_PI / 180; }

struct Turned {
    std::vector<double> x, z;
};

// The points as they lie when the tilts are `d` degrees larger.
Turned turned(const std::vector<TrackedPoint>& p, double d) {
    const double c = std::cos(radians(d)), s = std::sin(radians(d));
    Turned t;
    t.x.reserve(p.size()), t.z.reserve(p.size());
    for (const TrackedPoint& q : p) t.x.push_back(q.x * c - q.z * s), t.z.push_back(q.x * s + q.z * c);
    return t;
}

// The depths' weighted histogram, smoothed, as shares; `low` the first bin's depth.
std::vector<double> depth_density(const std::vector<double>& z, const std::vector<double>& w, double& low) {
    const auto [mn, mx] = std::minmax_element(z.begin(), z.end());
    const int pad = int(std::ceil(4 * kSigmaPx / kBinPx));
    low = *mn - pad * kBinPx;
    const int bins = int((*mx - *mn) / kBinPx) + 2 * pad + 2;
    std::vector<double> h(bins, 0.0);
    double total = 0;
    for (std::size_t i = 0; i < z.size(); ++i) h[int((z[i] - low) / kBinPx + 0.5)] += w[i], total += w[i];
    std::vector<double> kernel(2 * pad + 1);
    for (int k = -pad; k <= pad; ++k) kernel[k + pad] = std::exp(-0.5 * std::pow(k * kBinPx / kSigmaPx, 2));
    std::vector<double> out(bins, 0.0);
    for (int b = 0; b < bins; ++b) {
        if (h[b] == 0) continue;
        for (int k = -pad; k <= pad; ++k)
            if (b + k >= 0 && b + k < bins) out[b + k] += h[b] * kernel[k + pad] / total;
    }
    return out;
}

// How tightly the depths gather: the smoothed histogram's sum of squares.
double gathering(const std::vector<double>& z, const std::vector<double>& w) {
    double low;
    double s = 0;
    for (double q : depth_density(z, w, low)) s += q * q;
    return s;
}

// The shared slope of z against x over the layers' points (z_k + slope x).
double shared_slope(const Turned& t, const std::vector<double>& w, const std::vector<int>& layer, int layers,
                    const std::vector<TrackedPoint>& p, int left_out_group) {
    Eigen::MatrixXd m = Eigen::MatrixXd::Zero(layers + 1, layers + 1);
    Eigen::VectorXd r = Eigen::VectorXd::Zero(layers + 1);
    for (std::size_t i = 0; i < t.z.size(); ++i) {
        if (layer[i] < 0 || p[i].group == left_out_group) continue;
        const int k = layer[i];
        m(k, k) += w[i], m(k, layers) += w[i] * t.x[i], m(layers, layers) += w[i] * t.x[i] * t.x[i];
        r[k] += w[i] * t.z[i], r[layers] += w[i] * t.x[i] * t.z[i];
    }
    for (int k = 0; k < layers; ++k) m(layers, k) = m(k, layers);
    for (int k = 0; k < layers; ++k)
        if (m(k, k) <= 0) m(k, k) = 1;  // a layer left empty
    return m.ldlt().solve(r)[layers];
}

}  // namespace

SpecimenTilt specimen_tilt_from_points(const std::vector<TrackedPoint>& points) {
    SpecimenTilt out;
    if (points.size() < 20) return out;
    std::vector<double> w;
    double mean_w = 0;
    for (const TrackedPoint& q : points) mean_w += q.weight;
    mean_w /= double(points.size());
    for (const TrackedPoint& q : points) w.push_back(q.weight / mean_w);

    // The offset under which the depths gather most, on a grid, then a
    // parabola through the best and its neighbours.
    const int steps = int(std::lround(kRangeDeg / kStepDeg));
    std::vector<double> score(2 * steps + 1);
    for (int k = -steps; k <= steps; ++k) score[k + steps] = gathering(turned(points, k * kStepDeg).z, w);
    const int best = int(std::max_element(score.begin(), score.end()) - score.begin());
    double d = (best - steps) * kStepDeg;
    if (best > 0 && best < 2 * steps) {
        const double a = score[best - 1], b = score[best], c = score[best + 1];
        const double denom = a - 2 * b + c;
        if (denom < 0) d += 0.5 * (a - c) / denom * kStepDeg;
    }

    // The layers: the density's peaks there; each point to the nearest within kLayerPx.
    Turned t = turned(points, d);
    double low;
    const std::vector<double> density = depth_density(t.z, w, low);
    const double top = *std::max_element(density.begin(), density.end());
    std::vector<double> peaks;
    for (std::size_t b = 1; b + 1 < density.size(); ++b)
        if (density[b] >= kPeakShare * top && density[b] >= density[b - 1] && density[b] > density[b + 1])
            peaks.push_back(low + double(b) * kBinPx);
    std::vector<int> layer(points.size(), -1);
    for (std::size_t i = 0; i < points.size(); ++i) {
        double nearest = kLayerPx;
        for (std::size_t k = 0; k < peaks.size(); ++k)
            if (std::fabs(t.z[i] - peaks[k]) < nearest) nearest = std::fabs(t.z[i] - peaks[k]), layer[i] = int(k);
    }
    const int layers = int(peaks.size());

    // The shared slope, points beyond 4 robust sigmas of their layer's line dropped.
    double slope = 0;
    std::vector<double> residual(points.size(), 0.0);
    auto residuals = [&] {
        Eigen::VectorXd zk = Eigen::VectorXd::Zero(layers), wk = Eigen::VectorXd::Zero(layers);
        for (std::size_t i = 0; i < points.size(); ++i)
            if (layer[i] >= 0) zk[layer[i]] += w[i] * (t.z[i] - slope * t.x[i]), wk[layer[i]] += w[i];
        for (std::size_t i = 0; i < points.size(); ++i)
            if (layer[i] >= 0) residual[i] = t.z[i] - slope * t.x[i] - zk[layer[i]] / wk[layer[i]];
    };
    for (int round = 0; round < kRobustRounds; ++round) {
        slope = shared_slope(t, w, layer, layers, points, -1);
        residuals();
        std::vector<double> a;
        for (std::size_t i = 0; i < points.size(); ++i)
            if (layer[i] >= 0) a.push_back(std::fabs(residual[i]));
        if (a.size() < 20) return out;
        const double limit = robust_limit(std::move(a), 0.05);
        for (std::size_t i = 0; i < points.size(); ++i)
            if (layer[i] >= 0 && std::fabs(residual[i]) > limit) layer[i] = -1;
    }
    slope = shared_slope(t, w, layer, layers, points, -1);
    residuals();
    out.offset_deg = d - std::atan(slope) * 180 / M_PI;
    std::vector<double> left_out;
    for (int g = 0; g < kGroups; ++g) left_out.push_back(d - std::atan(shared_slope(t, w, layer, layers, points, g)) * 180 / M_PI);
    out.standard_error = jackknife_error(left_out);
    double ss = 0, sw = 0, sx = 0, sxx = 0;
    for (std::size_t i = 0; i < points.size(); ++i)
        if (layer[i] >= 0) {
            ++out.points, ss += w[i] * residual[i] * residual[i], sw += w[i];
            sx += w[i] * t.x[i], sxx += w[i] * t.x[i] * t.x[i];
        }
    const double rms_x = sw > 0 ? std::sqrt(std::max(sxx / sw - (sx / sw) * (sx / sw), 0.0)) : 0.0;
    out.layers = layers;
    out.gathered = double(out.points) / double(points.size());
    out.spread_px = sw > 0 ? std::sqrt(ss / sw) : 0.0;
    out.content_bound_deg = rms_x > 0 ? std::atan(out.spread_px / rms_x) * 180 / M_PI : 90.0;
    out.stated_error = std::hypot(out.standard_error, out.content_bound_deg);
    out.planar = out.content_bound_deg <= kPlanarBoundDeg;
    out.found = std::isfinite(out.offset_deg) && std::fabs(out.offset_deg) < kRangeDeg;
    return out;
}

}  // namespace stackalign
