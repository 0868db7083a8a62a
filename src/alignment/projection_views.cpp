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

Shift frame_shift(const AxisGrid& g, double dx, double dy) {
    const double px = std::cos(g.axis_deg * kRad), py = std::sin(g.axis_deg * kRad);
    return {g.bin * (dx * px - dy * py), g.bin * (dx * py + dy * px)};
}

}  // namespace stackalign
