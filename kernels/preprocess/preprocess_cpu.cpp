#include "preprocess.hpp"
#include "sobel3d.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace stackalign::cpu {

ImageF normalise(const RawFrame& frame) {
    ImageF out = frame.to_float();
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    std::size_t bad = 0;
    for (float v : out.pixels) {
        // NaN/inf in float data would poison every later stage; treat as lowest.
        if (!std::isfinite(v)) {
            ++bad;
            continue;
        }
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    if (!(hi > lo)) {  // constant (or all non-finite) frame
        std::fill(out.pixels.begin(), out.pixels.end(), 0.0f);
        return out;
    }
    const float scale = 255.0f / (hi - lo);
    float* px = out.pixels.data();
    const long long n = (long long)(out.pixels.size());
    // Without non-finite values, a loop with no test, on vector units (with
    // the test it was scalar, 6 % of a small frame's load).
    const bool threads = parallel_filter(std::size_t(n));
    if (bad == 0) {
        #pragma omp parallel for schedule(static) if (threads)
        for (long long i = 0; i < n; ++i) px[i] = (px[i] - lo) * scale;
        return out;
    }
    #pragma omp parallel for schedule(static) if (threads)
    for (long long i = 0; i < n; ++i) px[i] = std::isfinite(px[i]) ? (px[i] - lo) * scale : 0.0f;
    return out;
}

// Box sums along x (each row padded with its repeated edges, so every
// offset is one pass over the row on vector units), then along y (a row of
// sums at a time), scaled once at the end: per pixel the same additions in
// the same order as summing its clamped neighbours one by one.
ImageF mean_filter(const ImageF& in, int r) {
    if (r <= 0) return in;
    if (in.depth > 1) return mean_filter_3d(in, r);
    const int w = in.width, h = in.height;
    ImageF rows(w, h), out(w, h);
    const float inv = 1.0f / float((2 * r + 1) * (2 * r + 1));
    const bool threads = parallel_filter(std::size_t(w) * h);
    #pragma omp parallel if (threads)
    {
        std::vector<float> padded(std::size_t(w) + 2 * r);
        #pragma omp for schedule(static)
        for (int y = 0; y < h; ++y) {
            const float* src = &in.pixels[std::size_t(y) * w];
            float* dst = &rows.pixels[std::size_t(y) * w];
            pad_row(src, w, r, padded.data());
            const float* from = padded.data();
            if (r == 1) {  // the default: the sum in a register, on vector units
                for (int x = 0; x < w; ++x) dst[x] = ((0.0f + from[x]) + from[x + 1]) + from[x + 2];
                continue;
            }
            for (int x = 0; x < w; ++x) dst[x] = 0.0f;
            for (int i = 0; i <= 2 * r; ++i)
                for (int x = 0; x < w; ++x) dst[x] += from[x + i];
        }
    }
    #pragma omp parallel for schedule(static) if (threads)
    for (int y = 0; y < h; ++y) {
        float* dst = &out.pixels[std::size_t(y) * w];
        auto row = [&](int j) { return &rows.pixels[std::size_t(std::clamp(y + j, 0, h - 1)) * w]; };
        if (r == 1) {
            const float *a = row(-1), *b = row(0), *c = row(1);
            for (int x = 0; x < w; ++x) dst[x] = (((0.0f + a[x]) + b[x]) + c[x]) * inv;
            continue;
        }
        for (int x = 0; x < w; ++x) dst[x] = 0.0f;
        for (int j = -r; j <= r; ++j) {
            const float* from = row(j);
            for (int x = 0; x < w; ++x) dst[x] += from[x];
        }
        for (int x = 0; x < w; ++x) dst[x] *= inv;
    }
    return out;
}

// Box sums along x, then y, then z (scaled once, at the end).
ImageF mean_filter_3d(const ImageF& in, int r) {
    const int w = in.width, h = in.height, d = in.depth;
    ImageF a = ImageF::volume(w, h, d), b = ImageF::volume(w, h, d);
    const float inv = 1.0f / float((2 * r + 1) * (2 * r + 1) * (2 * r + 1));
    #pragma omp parallel for schedule(static)
    for (int row = 0; row < h * d; ++row) {
        const float* src = &in.pixels[std::size_t(row) * w];
        for (int x = 0; x < w; ++x) {
            float acc = 0.0f;
            for (int i = -r; i <= r; ++i) acc += src[std::clamp(x + i, 0, w - 1)];
            a.pixels[std::size_t(row) * w + x] = acc;
        }
    }
    #pragma omp parallel for schedule(static)
    for (int row = 0; row < h * d; ++row) {
        const int y = row % h, z = row / h;
        for (int x = 0; x < w; ++x) {
            float acc = 0.0f;
            for (int j = -r; j <= r; ++j) acc += a.at(x, std::clamp(y + j, 0, h - 1), z);
            b.pixels[std::size_t(row) * w + x] = acc;
        }
    }
    #pragma omp parallel for schedule(static)
    for (int row = 0; row < h * d; ++row) {
        const int y = row % h, z = row / h;
        for (int x = 0; x < w; ++x) {
            float acc = 0.0f;
            for (int k = -r; k <= r; ++k) acc += b.at(x, y, std::clamp(z + k, 0, d - 1));
            a.pixels[std::size_t(row) * w + x] = acc * inv;
        }
    }
    return a;
}

ImageF sobel_magnitude(const ImageF& in) {
    if (in.depth > 1) {
        ImageF out = ImageF::volume(in.width, in.height, in.depth);
        #pragma omp parallel for schedule(static)
        for (int row = 0; row < in.height * in.depth; ++row)
            for (int x = 0; x < in.width; ++x)
                out.pixels[std::size_t(row) * in.width + x] =
                    sobel3d_magnitude(in.pixels.data(), in.width, in.height, in.depth, x, row % in.height, row / in.height);
        return out;
    }
    const int w = in.width, h = in.height;
    ImageF out(w, h);
    #pragma omp parallel for schedule(static) if (parallel_filter(std::size_t(w) * h))
    for (int y = 0; y < h; ++y) {
        const float* up = &in.pixels[std::size_t(std::max(y - 1, 0)) * w];
        const float* mid = &in.pixels[std::size_t(y) * w];
        const float* dn = &in.pixels[std::size_t(std::min(y + 1, h - 1)) * w];
        float* o = &out.pixels[std::size_t(y) * w];
        auto at = [&](int x, int l, int r) {
            const float gx = (up[r] + 2.0f * mid[r] + dn[r]) - (up[l] + 2.0f * mid[l] + dn[l]);
            const float gy = (dn[l] + 2.0f * dn[x] + dn[r]) - (up[l] + 2.0f * up[x] + up[r]);
            o[x] = std::sqrt(gx * gx + gy * gy);
        };
        // The edge columns repeat their neighbour; the others need no clamp,
        // so their loop runs on vector units.
        at(0, 0, std::min(1, w - 1));
        for (int x = 1; x < w - 1; ++x) at(x, x - 1, x + 1);
        if (w > 1) at(w - 1, w - 2, w - 1);
    }
    return out;
}

BinImage quantize(const ImageF& values, float threshold, int bins) {
    BinImage out = BinImage::volume(values.width, values.height, values.depth);
    float top = 0.0f;
    for (float v : values.pixels) top = std::max(top, v);
    const float scale = top > threshold ? float(bins - 1) / (top - threshold) : 0.0f;
    // Both arms made, one kept, the tests joined without a branch, and the
    // pixels through plain pointers (a byte store may alias the vectors'
    // own pointers): the loop runs on vector units. With a branch it was
    // 2 ns a pixel on edge maps, a seventh of a small frame's load
    // (bench/probes/load_steps.cpp). Values are finite and at most `top`,
    // so the conversion is too.
    const float* in = values.pixels.data();
    std::uint8_t* o = out.pixels.data();
    const long long n = (long long)(values.pixels.size());
    #pragma omp parallel for schedule(static) if (parallel_filter(std::size_t(n)))
    for (long long i = 0; i < n; ++i) {
        const float v = in[i];
        const int above = std::min(bins - 1, 1 + int((v - threshold) * scale));
        const int kept = (v > 0.0f) & (v >= threshold);
        o[i] = std::uint8_t(above & -kept);
    }
    return out;
}

Preprocessed preprocess_keeping(const RawFrame& frame, const PreprocessParams& p) {
    Preprocessed out;
    out.normalised = normalise(frame);
    out.values = mean_filter(out.normalised, p.mean_radius);
    if (p.sobel) out.values = sobel_magnitude(out.values);
    out.bins = quantize(out.values, p.threshold, p.bins);
    return out;
}

BinImage preprocess(const RawFrame& frame, const PreprocessParams& p) {
    return std::move(preprocess_keeping(frame, p).bins);
}

}  // namespace stackalign::cpu
