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

// Where sample (si, sj) of grid pixel (i, j) lies in the frame of a view
// placed by `offset`: the reference's point, the tilt axis along the
// grid's y, then where the frame shows it.
struct GridToFrame {
    explicit GridToFrame(const AxisGrid& grid)
        : g(grid), px(std::cos(grid.axis_deg * kRad)), py(std::sin(grid.axis_deg * kRad)), qx(-py), qy(px),
          cx((grid.frame_width - 1) / 2.0), cy((grid.frame_height - 1) / 2.0), half_bin((grid.bin - 1) / 2.0) {}
    void at(const Transform& offset, int i, int j, int si, int sj, double& fx, double& fy) const {
        const double u = (i - (g.width - 1) / 2.0) * g.bin + si - half_bin;
        const double w = (j - (g.rows - 1) / 2.0) * g.bin + sj - half_bin;
        const double rx = u * px + w * qx, ry = u * py + w * qy;
        fx = offset.a11 * rx + offset.a12 * ry + cx + offset.dx;
        fy = offset.a21 * rx + offset.a22 * ry + cy + offset.dy;
    }
    // Whether all of the pixel's bin x bin samples lie in the frame: its
    // corner samples do (the frame is convex).
    bool covers(const Transform& offset, int i, int j) const {
        for (int c = 0; c < 4; ++c) {
            double fx, fy;
            at(offset, i, j, c & 1 ? g.bin - 1 : 0, c & 2 ? g.bin - 1 : 0, fx, fy);
            if (!(fx >= 0 && fy >= 0 && fx <= g.frame_width - 1 && fy <= g.frame_height - 1)) return false;
        }
        return true;
    }
    const AxisGrid& g;
    const double px, py;  // across the axis
    const double qx, qy;  // along it
    const double cx, cy, half_bin;
};

// A raised cosine from 0 at the edge to 1 `ramp` pixels in: the weight of
// the pixel `edge` pixels inside it.
float raised_cosine(int edge, int ramp) {
    return edge >= ramp ? 1.0f : float(0.5 - 0.5 * std::cos(M_PI * (edge + 0.5) / ramp));
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
    const GridToFrame to_frame(g);
    visit_pixels(frame, [&](const auto* p) {
        for (int j = 0; j < g.rows; ++j)
            for (int i = 0; i < g.width; ++i) {
                double acc = 0;
                bool ok = true;
                for (int sj = 0; sj < g.bin && ok; ++sj)
                    for (int si = 0; si < g.bin && ok; ++si) {
                        double fx, fy, v = 0;
                        to_frame.at(offset, i, j, si, sj, fx, fy);
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
            v = (v - mean) * raised_cosine(std::min(i, g.width - 1 - i), taper);
        }
}

ImageF axis_view(const RawFrame& frame, const Transform& offset, const AxisGrid& g) {
    ImageF out(g.width, g.rows, 0.0f);
    axis_view(frame, offset, g, out.pixels.data());
    return out;
}

GridRect covered_rect(const AxisGrid& g, const std::vector<Transform>& offsets) {
    const GridToFrame to_frame(g);
    const int W = g.width, R = g.rows;
    // Each view covers a convex part of the grid, so each row's covered
    // pixels are one run: found from either end (a few pixels in, on the
    // grid's edges only), and met over the views. need[j]: the columns'
    // inset that row j asks (W where it has none covered).
    std::vector<int> need(R, W);
    for (int j = 0; j < R; ++j) {
        int lo = 0, hi = W - 1;
        for (const Transform& o : offsets) {
            while (lo <= hi && !to_frame.covers(o, lo, j)) ++lo;
            while (hi >= lo && !to_frame.covers(o, hi, j)) --hi;
        }
        if (lo <= hi) need[j] = std::max(lo, W - 1 - hi);
    }
    // The rows' inset from the middle outwards; the columns' the most any
    // of those rows asks. The largest area wins (the first of equals).
    GridRect best;
    int mx = 0;
    for (int my = (R - 1) / 2; my >= 0; --my) {
        mx = std::max({mx, need[my], need[R - 1 - my]});
        if (2 * mx >= W) break;
        if (long(W - 2 * mx) * (R - 2 * my) > long(best.width) * best.height) best = {mx, my, W - 2 * mx, R - 2 * my};
    }
    return best;
}

void taper_to_rect(float* view, const AxisGrid& g, const GridRect& r, int ramp) {
    auto weight = [&](int i, int first, int n) {
        const int d = std::min(i - first, first + n - 1 - i);  // pixels inside the nearer edge
        return d < 0 ? 0.0f : raised_cosine(d, ramp);
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
