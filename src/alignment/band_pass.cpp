#include "band_pass.hpp"

#include <algorithm>
#include <cmath>

namespace stackalign {
namespace {

std::vector<float> blurred(const std::vector<float>& in, int w, int h, double sigma) {
    const int r = int(std::ceil(3 * sigma));
    std::vector<double> k(2 * r + 1);
    double s = 0;
    for (int i = -r; i <= r; ++i) s += k[i + r] = std::exp(-0.5 * i * i / (sigma * sigma));
    for (double& x : k) x /= s;
    std::vector<float> tmp(in.size()), out(in.size());
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            double acc = 0;
            for (int i = -r; i <= r; ++i) acc += k[i + r] * in[std::size_t(y) * w + std::clamp(x + i, 0, w - 1)];
            tmp[std::size_t(y) * w + x] = float(acc);
        }
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            double acc = 0;
            for (int i = -r; i <= r; ++i) acc += k[i + r] * tmp[std::size_t(std::clamp(y + i, 0, h - 1)) * w + x];
            out[std::size_t(y) * w + x] = float(acc);
        }
    return out;
}

}  // namespace

std::vector<float> band_pass(const ImageF& v, double fine, double coarse) {
    const std::vector<float> in(v.pixels.begin(), v.pixels.end());
    const std::vector<float> a = blurred(in, v.width, v.height, fine), b = blurred(in, v.width, v.height, coarse);
    std::vector<float> out(a.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = a[i] - b[i];
    return out;
}

}  // namespace stackalign
