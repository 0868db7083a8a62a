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
    const float* in = out.pixels.data();
    const long long count = (long long)(out.pixels.size());
    // In parallel on large frames and volumes: the lowest and highest are
    // the same in any order. One thread over a 15-megavoxel volume was part
    // of a landmark job's serial time.
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi) reduction(+ : bad) \
    if (parallel_filter(std::size_t(count) / 4))
    for (long long i = 0; i < count; ++i) {
        const float v = in[i];
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

// out[x] = the sum of line(-r)[x] .. line(r)[x], added in that order from
// 0, then times `inv` where `scale`: per pixel the additions of summing its
// clamped neighbours one by one, a line at a time on vector units.
template <typename Line>
inline void sum_lines(float* __restrict out, int w, int r, Line&& line, float inv, bool scale) {
    if (r == 1) {  // the default: the sum in a register
        const float *a = line(-1), *b = line(0), *c = line(1);
        if (scale)
            for (int x = 0; x < w; ++x) out[x] = (((0.0f + a[x]) + b[x]) + c[x]) * inv;
        else
            for (int x = 0; x < w; ++x) out[x] = ((0.0f + a[x]) + b[x]) + c[x];
        return;
    }
    for (int x = 0; x < w; ++x) out[x] = 0.0f;
    for (int j = -r; j <= r; ++j) {
        const float* from = line(j);
        for (int x = 0; x < w; ++x) out[x] += from[x];
    }
    if (scale)
        for (int x = 0; x < w; ++x) out[x] *= inv;
}

// Box sums along x (each row padded with its repeated edges, so every
// offset is one pass over the row), then along y (a row of sums at a time),
// scaled once at the end.
ImageF mean_filter(const ImageF& in, int r) {
    if (r <= 0) return in;
    if (in.depth > 1) return mean_filter_3d(in, r);
    const int w = in.width, h = in.height;
    ImageF rows = ImageF::for_overwrite(w, h), out = ImageF::for_overwrite(w, h);
    const float inv = 1.0f / float((2 * r + 1) * (2 * r + 1));
    const bool threads = parallel_filter(std::size_t(w) * h);
    #pragma omp parallel if (threads)
    {
        std::vector<float> padded(std::size_t(w) + 2 * r);
        #pragma omp for schedule(static)
        for (int y = 0; y < h; ++y) {
            pad_row(&in.pixels[std::size_t(y) * w], w, r, padded.data());
            sum_lines(&rows.pixels[std::size_t(y) * w], w, r, [&](int i) { return padded.data() + r + i; }, 1.0f, false);
        }
    }
    #pragma omp parallel for schedule(static) if (threads)
    for (int y = 0; y < h; ++y)
        sum_lines(&out.pixels[std::size_t(y) * w], w, r,
                  [&](int j) { return &rows.pixels[std::size_t(std::clamp(y + j, 0, h - 1)) * w]; }, inv, true);
    return out;
}

// Box sums along x, then y, then z (scaled once, at the end).
ImageF mean_filter_3d(const ImageF& in, int r) {
    const int w = in.width, h = in.height, d = in.depth;
    ImageF a = ImageF::for_overwrite(w, h, d), b = ImageF::for_overwrite(w, h, d);
    const float inv = 1.0f / float((2 * r + 1) * (2 * r + 1) * (2 * r + 1));
    const bool threads = parallel_filter(in.pixels.size());
    auto row_of = [w](ImageF& im, long long row) { return im.pixels.data() + row * w; };
    #pragma omp parallel if (threads)
    {
        std::vector<float> padded(std::size_t(w) + 2 * r);
        #pragma omp for schedule(static)
        for (int row = 0; row < h * d; ++row) {
            pad_row(in.pixels.data() + std::size_t(row) * w, w, r, padded.data());
            sum_lines(row_of(a, row), w, r, [&](int i) { return padded.data() + r + i; }, 1.0f, false);
        }
    }
    #pragma omp parallel for schedule(static) if (threads)
    for (int row = 0; row < h * d; ++row) {
        const int y = row % h, z = row / h;
        sum_lines(row_of(b, row), w, r,
                  [&](int j) { return row_of(a, (long long)(z) * h + std::clamp(y + j, 0, h - 1)); }, 1.0f, false);
    }
    #pragma omp parallel for schedule(static) if (threads)
    for (int row = 0; row < h * d; ++row) {
        const int y = row % h, z = row / h;
        sum_lines(row_of(a, row), w, r,
                  [&](int k) { return row_of(b, (long long)(std::clamp(z + k, 0, d - 1)) * h + y); }, inv, true);
    }
    return a;
}

ImageF sobel_magnitude(const ImageF& in) {
    if (in.depth > 1) {
        // A row of voxels at a time: its nine neighbour rows set once, the
        // inner voxels (no column clamped) on vector units, the same
        // expressions as sobel3d_magnitude's (the GPU twin's) lane by lane.
        // Voxel by voxel it was a fifth of a 15-megavoxel landmark job.
        const int w = in.width, h = in.height, d = in.depth;
        ImageF out = ImageF::for_overwrite(w, h, d);
        #pragma omp parallel for schedule(static) if (parallel_filter(in.pixels.size()))
        for (int row = 0; row < h * d; ++row) {
            const float* r[3][3];
            sobel3d_rows(in.pixels.data(), w, h, d, row % h, row / h, r);
            float* o = out.pixels.data() + std::size_t(row) * w;
            for (const int x : {0, w - 1})  // the same rows, the columns clamped
                o[x] = sobel3d_from([&](int i, int j, int k) { return r[j][k][clamp_index(x + i - 1, w)]; });
            for (int x = 1; x < w - 1; ++x) o[x] = sobel3d_from([&](int i, int j, int k) { return r[j][k][x + i - 1]; });
        }
        return out;
    }
    const int w = in.width, h = in.height;
    ImageF out = ImageF::for_overwrite(w, h);
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
    BinImage out = BinImage::for_overwrite(values.width, values.height, values.depth);
    float top = 0.0f;
    const float* in = values.pixels.data();
    const long long n = (long long)(values.pixels.size());
    #pragma omp parallel for schedule(static) reduction(max : top) if (parallel_filter(std::size_t(n) / 4))
    for (long long i = 0; i < n; ++i) top = std::max(top, in[i]);
    const float scale = top > threshold ? float(bins - 1) / (top - threshold) : 0.0f;
    // Both arms made, one kept, the tests joined without a branch, and the
    // pixels through plain pointers (a byte store may alias the vectors'
    // own pointers): the loop runs on vector units. With a branch it was
    // 2 ns a pixel on edge maps, a seventh of a small frame's load
    // (bench/probes/load_steps.cpp). Values are finite and at most `top`,
    // so the conversion is too.
    std::uint8_t* o = out.pixels.data();
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

namespace stackalign {

BinImage sampled_bins(const BinImage& full, const PixelSample& s) {
    if (s.stride == 1) return full;
    BinImage out = BinImage::for_overwrite(s.width(full.width), s.height(full.height), 1);
    for (int j = 0; j < out.height; ++j)
        for (int i = 0; i < out.width; ++i)
            out.pixels[std::size_t(j) * out.width + i] =
                full.pixels[std::size_t(s.y + s.stride * j) * full.width + s.x + std::size_t(s.stride) * i];
    return out;
}

}  // namespace stackalign
