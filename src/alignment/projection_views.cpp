#include "projection_views.hpp"

#include <algorithm>
#include <cmath>

namespace stackalign {

namespace {
constexpr double kRad = 3.14159265358979323846 / 180.0;

// Bilinear sample of a frame's pixels (each as a float, as to_float() has
// them); false outside it or where not finite.
template <typename T>
bool sample(const T* p, int width, int height, double x, double y, double& out) {
    if (!(x >= 0 && y >= 0 && x <= width - 1 && y <= height - 1)) return false;
    const int x0 = std::min(int(x), std::max(width - 2, 0)), y0 = std::min(int(y), std::max(height - 2, 0));
    const int x1 = std::min(x0 + 1, width - 1), y1 = std::min(y0 + 1, height - 1);
    auto at = [&](int i, int j) { return double(float(p[std::size_t(j) * width + i])); };
    const double fx = x - x0, fy = y - y0;
    const double top = (1 - fx) * at(x0, y0) + fx * at(x1, y0);
    const double bot = (1 - fx) * at(x0, y1) + fx * at(x1, y1);
    out = (1 - fy) * top + fy * bot;
    return std::isfinite(out);
}
}  // namespace

AxisGrid axis_grid(int frame_width, int frame_height, double axis_deg, int bin) {
    AxisGrid g{frame_width, frame_height, axis_deg, std::max(bin, 1), 0, 0};
    const bool upright = std::fabs(std::cos(axis_deg * kRad)) >= std::fabs(std::sin(axis_deg * kRad));
    g.width = (upright ? frame_width : frame_height) / g.bin;
    g.rows = (upright ? frame_height : frame_width) / g.bin;
    return g;
}

void axis_samples(const RawFrame& frame, const Transform& offset, const AxisGrid& g, float* out) {
    const double px = std::cos(g.axis_deg * kRad), py = std::sin(g.axis_deg * kRad);  // across the axis
    const double qx = -py, qy = px;                                                    // along it
    const double cx = (g.frame_width - 1) / 2.0, cy = (g.frame_height - 1) / 2.0;
    const double half_bin = (g.bin - 1) / 2.0;
    visit_pixels(frame, [&](const auto* p) {
        for (int j = 0; j < g.rows; ++j)
            for (int i = 0; i < g.width; ++i) {
                double acc = 0;
                bool ok = true;
                for (int sj = 0; sj < g.bin && ok; ++sj)
                    for (int si = 0; si < g.bin && ok; ++si) {
                        const double u = (i - (g.width - 1) / 2.0) * g.bin + si - half_bin;
                        const double w = (j - (g.rows - 1) / 2.0) * g.bin + sj - half_bin;
                        // The reference's point, then where the frame shows it.
                        const double rx = u * px + w * qx, ry = u * py + w * qy;
                        const double fx = offset.a11 * rx + offset.a12 * ry + cx + offset.dx;
                        const double fy = offset.a21 * rx + offset.a22 * ry + cy + offset.dy;
                        double v = 0;
                        ok = sample(p, frame.width, frame.height, fx, fy, v);
                        acc += v;
                    }
                out[std::size_t(j) * g.width + i] = ok ? float(acc / (g.bin * g.bin)) : NAN;
            }
    });
}

void axis_view(const RawFrame& frame, const Transform& offset, const AxisGrid& g, float* out) {
    axis_samples(frame, offset, g, out);
    // One thread per view (the caller spreads the views), so the mean is
    // summed in pixel order: the same bits on any number of threads. Pixels
    // partly outside the frame are NaN until levelled.
    double sum = 0;
    long count = 0;
    for (std::size_t k = 0, n = std::size_t(g.width) * g.rows; k < n; ++k)
        if (!std::isnan(out[k])) sum += out[k], ++count;
    const float mean = count ? float(sum / count) : 0.0f;
    const int taper = std::max(2, g.width / 16);
    for (int j = 0; j < g.rows; ++j)
        for (int i = 0; i < g.width; ++i) {
            float& v = out[std::size_t(j) * g.width + i];
            if (std::isnan(v)) {
                v = 0.0f;
                continue;
            }
            const int edge = std::min(i, g.width - 1 - i);
            const float t = edge >= taper ? 1.0f : float(0.5 - 0.5 * std::cos(M_PI * (edge + 0.5) / taper));
            v = (v - mean) * t;
        }
}

ImageF axis_view(const RawFrame& frame, const Transform& offset, const AxisGrid& g) {
    ImageF out(g.width, g.rows, 0.0f);
    axis_view(frame, offset, g, out.pixels.data());
    return out;
}

GridRect covered_rect(const AxisGrid& g, const std::vector<Transform>& offsets) {
    const double px = std::cos(g.axis_deg * kRad), py = std::sin(g.axis_deg * kRad);
    const double qx = -py, qy = px;
    const double cx = (g.frame_width - 1) / 2.0, cy = (g.frame_height - 1) / 2.0;
    const double half_bin = (g.bin - 1) / 2.0;
    // outside(i, j): 1 where some view's frame misses one of the pixel's
    // bin x bin samples (its corner samples: the frame is convex).
    const int W = g.width, R = g.rows;
    std::vector<int> sums(std::size_t(W + 1) * (R + 1), 0);  // prefix sums of outside
    auto inside = [&](const Transform& o, double u, double w) {
        const double rx = u * px + w * qx, ry = u * py + w * qy;
        const double fx = o.a11 * rx + o.a12 * ry + cx + o.dx, fy = o.a21 * rx + o.a22 * ry + cy + o.dy;
        return fx >= 0 && fy >= 0 && fx <= g.frame_width - 1 && fy <= g.frame_height - 1;
    };
    for (int j = 0; j < R; ++j)
        for (int i = 0; i < W; ++i) {
            bool in = true;
            for (const Transform& o : offsets) {
                for (int c = 0; c < 4 && in; ++c) {
                    const double u = (i - (W - 1) / 2.0) * g.bin + (c & 1 ? g.bin - 1 : 0) - half_bin;
                    const double w = (j - (R - 1) / 2.0) * g.bin + (c & 2 ? g.bin - 1 : 0) - half_bin;
                    in = inside(o, u, w);
                }
                if (!in) break;
            }
            sums[std::size_t(j + 1) * (W + 1) + i + 1] = (in ? 0 : 1) + sums[std::size_t(j) * (W + 1) + i + 1] +
                                                         sums[std::size_t(j + 1) * (W + 1) + i] -
                                                         sums[std::size_t(j) * (W + 1) + i];
        }
    auto clear = [&](int mx, int my) {  // the rectangle inset by mx, my has no outside pixel
        const int x0 = mx, x1 = W - mx, y0 = my, y1 = R - my;
        const auto at = [&](int x, int y) { return sums[std::size_t(y) * (W + 1) + x]; };
        return at(x1, y1) - at(x0, y1) - at(x1, y0) + at(x0, y0) == 0;
    };
    GridRect best;
    for (int mx = 0, my = R / 2; 2 * mx < W; ++mx) {
        // The inset along the rows needed shrinks as the columns' grows.
        while (my > 0 && clear(mx, my - 1)) --my;
        if (2 * my >= R || !clear(mx, my)) continue;
        if (long(W - 2 * mx) * (R - 2 * my) > long(best.width) * best.height) best = {mx, my, W - 2 * mx, R - 2 * my};
    }
    return best;
}

void taper_to_rect(float* view, const AxisGrid& g, const GridRect& r, int ramp) {
    auto weight = [&](int i, int first, int n) {
        const int d = std::min(i - first, first + n - 1 - i);  // pixels inside the nearer edge
        if (d < 0) return 0.0f;
        return d >= ramp ? 1.0f : float(0.5 - 0.5 * std::cos(M_PI * (d + 0.5) / ramp));
    };
    for (int j = 0; j < g.rows; ++j) {
        const float along = weight(j, r.y, r.height);
        for (int i = 0; i < g.width; ++i) view[std::size_t(j) * g.width + i] *= along * weight(i, r.x, r.width);
    }
}

Shift frame_shift(const AxisGrid& g, double dx, double dy) {
    const double px = std::cos(g.axis_deg * kRad), py = std::sin(g.axis_deg * kRad);
    return {g.bin * (dx * px - dy * py), g.bin * (dx * py + dy * px)};
}

}  // namespace stackalign
