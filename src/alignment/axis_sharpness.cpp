#include "axis_sharpness.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "subpixel.hpp"

namespace stackalign {

void binned_across_shift(const std::vector<float>& held, const HeldGrid& h, int first, int row0, int shift, int width,
                         int rows, std::vector<float>& out) {
    out.assign(std::size_t(h.views) * rows * width, std::numeric_limits<float>::quiet_NaN());
    const float share = 1.0f / float(h.fine * h.fine);
#pragma omp parallel for schedule(static)
    for (int v = 0; v < h.views; ++v)
        for (int j = 0; j < rows; ++j)
            for (int i = 0; i < width; ++i) {
                const int x0 = first + shift + i * h.fine, y0 = row0 + j * h.fine;
                if (x0 < 0 || x0 + h.fine > h.width || y0 < 0 || y0 + h.fine > h.rows) continue;
                float sum = 0.0f;
                for (int b = 0; b < h.fine; ++b) {
                    const float* row = &held[(std::size_t(v) * h.rows + y0 + b) * h.width + x0];
                    for (int a = 0; a < h.fine; ++a) sum += row[a];
                }
                out[(std::size_t(v) * rows + j) * width + i] = sum * share;  // NaN stays NaN
            }
}

double sharpness(const std::vector<float>& volume, int width, int thickness, int rows) {
    double s2 = 0, s4 = 0;
    long n = 0;
    for (int r = 0; r < rows; ++r)
        for (int z = 0; z < thickness; ++z) {
            const float* line = &volume[(std::size_t(r) * thickness + z) * width];
            for (int x = width / 4; x < width - width / 4; ++x) {
                const double v2 = double(line[x]) * line[x];
                s2 += v2, s4 += v2 * v2, ++n;
            }
        }
    if (n == 0 || s2 <= 0) return 0.0;
    return std::pow(s4 / double(n), 0.25) / std::sqrt(s2 / double(n));
}

SharpestShift sharpest_shift(const std::vector<double>& shifts, const std::vector<double>& values) {
    SharpestShift out;
    if (values.size() < 3) return out;
    const std::size_t k = std::size_t(std::max_element(values.begin(), values.end()) - values.begin());
    if (k == 0 || k + 1 == values.size()) return out;
    out.found = true;
    out.shift = shifts[k] + (shifts[k + 1] - shifts[k]) * parabolic_offset(values[k - 1], values[k], values[k + 1]);
    return out;
}

}  // namespace stackalign
