#include "noise_level.hpp"

#include <algorithm>
#include <cmath>


namespace stackalign {

constexpr int kCrop = 256;

double noise_to_contrast(const RawFrame& frame) {
    const int w = std::min(frame.width, kCrop), h = std::min(frame.height, kCrop);
    if (w < 3 || h < 3) return 0.0;
    const int x0 = (frame.width - w) / 2, y0 = (frame.height - h) / 2;
    std::vector<double> v(std::size_t(w) * h);
    visit_pixels(frame, [&](const auto* p) {
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                v[std::size_t(y) * w + x] = double(p[std::size_t(y0 + y) * frame.width + x0 + x]);
    });
    double sum = 0, sum2 = 0;
    for (const double a : v) sum += a, sum2 += a * a;
    const double n = double(v.size()), mean = sum / n, sd = std::sqrt(std::max(0.0, sum2 / n - mean * mean));
    if (!(sd > 0) || !std::isfinite(sd)) return 0.0;
    std::vector<double> response;
    response.reserve(std::size_t(w - 2) * (h - 2));
    for (int y = 1; y + 1 < h; ++y)
        for (int x = 1; x + 1 < w; ++x) {
            const double* r0 = &v[std::size_t(y - 1) * w + x];
            const double* r1 = r0 + w;
            const double* r2 = r1 + w;
            const double lo = std::min({r0[-1], r0[0], r0[1], r1[-1], r1[0], r1[1], r2[-1], r2[0], r2[1]});
            const double hi = std::max({r0[-1], r0[0], r0[1], r1[-1], r1[0], r1[1], r2[-1], r2[0], r2[1]});
            if (hi == lo) continue;
            response.push_back(std::fabs((r0[-1] + r0[1] + r2[-1] + r2[1]) - 2 * (r0[0] + r1[-1] + r1[1] + r2[0]) +
                                         4 * r1[0]));
        }
    if (response.empty()) return 0.0;
    auto mid = response.begin() + response.size() / 2;
    std::nth_element(response.begin(), mid, response.end());
    return 1.4826 * *mid / 6.0 / sd;
}

double series_noise(const std::vector<double>& ratios) {
    return ratios.empty() ? 1.0 : *std::min_element(ratios.begin(), ratios.end());
}

}  // namespace stackalign
