// One pixel of a view sampled on the tilt-axis grid (projection_views.hpp),
// written once for the CPU and the GPU (kernels/axis_grid): the same
// arithmetic in the same order, so both twins give the same floats.
#pragma once
#include <cstddef>
#include <limits>

#include "../core/host_device.hpp"

namespace stackalign {

// Where grid pixel (i, j)'s sample (si, sj) lies in a frame, for one view:
// the reference's point, the tilt axis along the grid's y, then where the
// view's offset (its linear part a, its shift d) puts it in the frame.
struct GridFrameMap {
    int grid_width = 0, grid_rows = 0, bin = 1;
    int frame_width = 0, frame_height = 0;
    double px = 1, py = 0;  // across the axis
    double qx = 0, qy = 1;  // along it
    double cx = 0, cy = 0, half_bin = 0;
    double a11 = 1, a12 = 0, a21 = 0, a22 = 1, dx = 0, dy = 0;

    STACKALIGN_HD void at(int i, int j, int si, int sj, double& fx, double& fy) const {
        const double u = (i - (grid_width - 1) / 2.0) * bin + si - half_bin;
        const double w = (j - (grid_rows - 1) / 2.0) * bin + sj - half_bin;
        const double rx = u * px + w * qx, ry = u * py + w * qy;
        fx = a11 * rx + a12 * ry + cx + dx;
        fy = a21 * rx + a22 * ry + cy + dy;
    }
};

// Bilinear sample of a frame's pixels (each as a float, as to_float() has
// them); false outside it or where not finite.
template <typename T>
STACKALIGN_HD bool bilinear_sample(const T* p, int width, int height, double x, double y, double& out) {
    if (!(x >= 0 && y >= 0 && x <= width - 1 && y <= height - 1)) return false;
    const int last_x = width - 2 > 0 ? width - 2 : 0, last_y = height - 2 > 0 ? height - 2 : 0;
    const int x0 = int(x) < last_x ? int(x) : last_x, y0 = int(y) < last_y ? int(y) : last_y;
    const int x1 = x0 + 1 < width - 1 ? x0 + 1 : width - 1, y1 = y0 + 1 < height - 1 ? y0 + 1 : height - 1;
    auto at = [&](int i, int j) { return double(float(p[std::size_t(j) * width + i])); };
    const double fx = x - x0, fy = y - y0;
    const double top = (1 - fx) * at(x0, y0) + fx * at(x1, y0);
    const double bot = (1 - fx) * at(x0, y1) + fx * at(x1, y1);
    out = (1 - fy) * top + fy * bot;
    return out - out == 0;  // NaN and infinities give NaN
}

// Grid pixel (i, j): the mean of its bin x bin bilinear samples, NaN where
// one falls outside the frame.
template <typename T>
STACKALIGN_HD float grid_pixel(const T* p, const GridFrameMap& m, int i, int j) {
    double acc = 0;
    bool ok = true;
    for (int sj = 0; sj < m.bin && ok; ++sj)
        for (int si = 0; si < m.bin && ok; ++si) {
            double fx, fy, v = 0;
            m.at(i, j, si, sj, fx, fy);
            ok = bilinear_sample(p, m.frame_width, m.frame_height, fx, fy, v);
            acc += v;
        }
    return ok ? float(acc / (m.bin * m.bin)) : std::numeric_limits<float>::quiet_NaN();
}

}  // namespace stackalign
