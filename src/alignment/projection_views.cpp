#include "projection_views.hpp"

#include <algorithm>
#include <cmath>

namespace stackalign {

namespace {
constexpr double kRad = 3.14159265358979323846 / 180.0;

// Whether all of grid pixel (i, j)'s bin x bin samples lie in the frame:
// its corner samples do (the frame is convex).
bool covers(const GridFrameMap& m, int i, int j) {
    for (int c = 0; c < 4; ++c) {
        double fx, fy;
        m.at(i, j, c & 1 ? m.bin - 1 : 0, c & 2 ? m.bin - 1 : 0, fx, fy);
        if (!(fx >= 0 && fy >= 0 && fx <= m.frame_width - 1 && fy <= m.frame_height - 1)) return false;
    }
    return true;
}

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

GridFrameMap grid_frame_map(const AxisGrid& g, const Transform& offset) {
    GridFrameMap m;
    m.grid_width = g.width, m.grid_rows = g.rows, m.bin = g.bin;
    m.frame_width = g.frame_width, m.frame_height = g.frame_height;
    m.px = std::cos(g.axis_deg * kRad), m.py = std::sin(g.axis_deg * kRad);
    m.qx = -m.py, m.qy = m.px;
    m.cx = (g.frame_width - 1) / 2.0, m.cy = (g.frame_height - 1) / 2.0, m.half_bin = (g.bin - 1) / 2.0;
    m.a11 = offset.a11, m.a12 = offset.a12, m.a21 = offset.a21, m.a22 = offset.a22, m.dx = offset.dx, m.dy = offset.dy;
    return m;
}

void axis_samples(const RawFrame& frame, const Transform& offset, const AxisGrid& g, float* out) {
    GridFrameMap m = grid_frame_map(g, offset);
    m.frame_width = frame.width, m.frame_height = frame.height;  // the frame sampled, whatever the grid was made for
    visit_pixels(frame, [&](const auto* p) {
        for (int j = 0; j < g.rows; ++j)
            for (int i = 0; i < g.width; ++i) out[std::size_t(j) * g.width + i] = grid_pixel(p, m, i, j);
    });
}

void level_axis_view(const AxisGrid& g, float* out) {
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
    axis_samples(frame, offset, g, out.pixels.data());
    level_axis_view(g, out.pixels.data());
    return out;
}

GridRect covered_rect(const AxisGrid& g, const std::vector<Transform>& offsets) {
    std::vector<GridFrameMap> maps;
    for (const Transform& o : offsets) maps.push_back(grid_frame_map(g, o));
    const int W = g.width, R = g.rows;
    // Each view covers a convex part of the grid, so each row's covered
    // pixels are one run: found from either end (a few pixels in, on the
    // grid's edges only), and met over the views. need[j]: the columns'
    // inset that row j asks (W where it has none covered).
    std::vector<int> need(R, W);
    for (int j = 0; j < R; ++j) {
        int lo = 0, hi = W - 1;
        for (const GridFrameMap& m : maps) {
            while (lo <= hi && !covers(m, lo, j)) ++lo;
            while (hi >= lo && !covers(m, hi, j)) --hi;
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
