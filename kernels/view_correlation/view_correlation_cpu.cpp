// The CPU twin of view_correlation.hpp: each pair on a thread, its
// stretched view transformed with Eigen's FFT (double), correlated with its
// partner's spectrum, made once.
#include <algorithm>
#include <complex>
#include <unsupported/Eigen/FFT>

#include "../../src/alignment/subpixel.hpp"
#include "stretch_sample.hpp"
#include "view_correlation.hpp"

namespace stackalign::cpu {
namespace {

// Half the 2D spectrum of an n x n real image: columns 0..n/2 of every
// row, row-major (the other columns are their complex conjugates).
using Spectrum = std::vector<std::complex<double>>;

// The FFT's plans (twiddles) and lines, kept per thread: one correlation
// transforms hundreds of lines, an estimate makes thousands of them.
struct Transforms {
    Eigen::FFT<double> fft{Eigen::FFT<double>::impl_type(), Eigen::FFT<double>::HalfSpectrum};
    std::vector<std::complex<double>> line, out;
};
Transforms& transforms() {
    thread_local Transforms t;
    return t;
}

// Every column of a half spectrum transformed, forward or inverse.
void transform_columns(Spectrum& s, int n, bool inverse) {
    const int h = n / 2 + 1;
    Transforms& t = transforms();
    t.line.resize(n);
    t.out.resize(n);
    for (int k = 0; k < h; ++k) {
        for (int y = 0; y < n; ++y) t.line[y] = s[std::size_t(y) * h + k];
        if (inverse)
            t.fft.inv(t.out.data(), t.line.data(), n);
        else
            t.fft.fwd(t.out.data(), t.line.data(), n);
        for (int y = 0; y < n; ++y) s[std::size_t(y) * h + k] = t.out[y];
    }
}

// The half spectrum of an n x n real image (row-major): each row's real
// transform, then each column's.
Spectrum half_spectrum(const std::vector<double>& image, int n) {
    const int h = n / 2 + 1;
    Spectrum s(std::size_t(n) * h);
    Transforms& t = transforms();
    for (int y = 0; y < n; ++y) t.fft.fwd(&s[std::size_t(y) * h], &image[std::size_t(y) * n], n);
    transform_columns(s, n, false);
    return s;
}

struct Prepared {
    Spectrum spectrum;
    double norm = 0;
};

// A view (`img`, or its stretch where `stretch` is given) weighted by the
// taper about its weighted mean, centred on the n x n grid, transformed.
Prepared prepare(const float* img, const InverseStretch* stretch, const std::vector<double>& taper, int w, int h,
                 int n) {
    thread_local std::vector<float> sampled;
    if (stretch) {
        sampled.resize(std::size_t(w) * h);
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) sampled[std::size_t(y) * w + x] = stretched_at(img, w, h, *stretch, x, y);
        img = sampled.data();
    }
    Prepared p;
    std::vector<double> image(std::size_t(n) * n, 0.0);
    const int ox = (n - w) / 2, oy = (n - h) / 2;
    double mean = 0, weight = 0;
    for (std::size_t i = 0; i < taper.size(); ++i) {
        mean += taper[i] * img[i];
        weight += taper[i];
    }
    mean /= std::max(weight, 1e-12);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double v = taper[std::size_t(y) * w + x] * (img[std::size_t(y) * w + x] - mean);
            image[std::size_t(y + oy) * n + x + ox] = v;
            p.norm += v * v;
        }
    p.norm = std::sqrt(p.norm);
    p.spectrum = half_spectrum(image, n);
    return p;
}

// The normalised cross-correlation of a and b at their best shift within
// +-max_lag (a parabola through the peak's neighbours per axis).
double best_correlation(const Prepared& a, const Prepared& b, int n, int max_lag) {
    const int h = n / 2 + 1;
    Spectrum c(a.spectrum.size());
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = a.spectrum[i] * std::conj(b.spectrum[i]);
    transform_columns(c, n, true);
    // Back to the image only the rows of the lags searched and their
    // neighbours: each row's inverse needs no other.
    thread_local std::vector<double> corr;
    corr.resize(std::size_t(n) * n);
    for (int y = 0; y < n; ++y)
        if (std::min(y, n - y) <= max_lag + 1) transforms().fft.inv(&corr[std::size_t(y) * n], &c[std::size_t(y) * h], n);
    auto at = [&](int dx, int dy) { return corr[std::size_t((dy + n) % n) * n + (dx + n) % n]; };
    int bx = 0, by = 0;
    for (int dy = -max_lag; dy <= max_lag; ++dy)
        for (int dx = -max_lag; dx <= max_lag; ++dx)
            if (at(dx, dy) > at(bx, by)) bx = dx, by = dy;
    double peak = at(bx, by);
    const double l = at(bx - 1, by), r = at(bx + 1, by), d = at(bx, by - 1), u = at(bx, by + 1);
    peak += -0.25 * (l - r) * parabolic_offset(l, at(bx, by), r) - 0.25 * (d - u) * parabolic_offset(d, at(bx, by), u);
    return a.norm > 0 && b.norm > 0 ? peak / (a.norm * b.norm) : 0.0;
}

class CpuViewCorrelator final : public ViewCorrelator {
public:
    CpuViewCorrelator(const std::vector<std::vector<float>>& views, int width, int height, int max_lag)
        : views_(views), w_(width), h_(height), n_(correlation_grid(width, height)), max_lag_(usable_lag(max_lag, n_)),
          taper_(circle_taper(width, height)), prepared_(views.size()) {
#pragma omp parallel for schedule(dynamic, 1)
        for (int i = 0; i < int(views_.size()); ++i)
            prepared_[i] = prepare(views_[i].data(), nullptr, taper_, w_, h_, n_);
    }

    std::vector<double> correlate(const std::vector<StretchedPair>& pairs) override {
        std::vector<double> out(pairs.size());
#pragma omp parallel for schedule(dynamic, 1)
        for (int k = 0; k < int(pairs.size()); ++k) {
            const StretchedPair& p = pairs[k];
            const InverseStretch s = inverse_of(p.stretch);
            out[k] = best_correlation(prepared_[p.to], prepare(views_[p.view].data(), &s, taper_, w_, h_, n_), n_,
                                      max_lag_);
        }
        return out;
    }

private:
    std::vector<std::vector<float>> views_;
    int w_, h_, n_, max_lag_;
    std::vector<double> taper_;
    std::vector<Prepared> prepared_;
};

}  // namespace

std::unique_ptr<ViewCorrelator> make_view_correlator(const std::vector<std::vector<float>>& views, int width,
                                                     int height, int max_lag) {
    return std::make_unique<CpuViewCorrelator>(views, width, height, max_lag);
}

}  // namespace stackalign::cpu
