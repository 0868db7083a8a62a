#include "image.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

namespace stackalign {

std::string to_string(PixelType t) {
    switch (t) {
        case PixelType::u8: return "uint8";
        case PixelType::u16: return "uint16";
        case PixelType::i16: return "int16";
        case PixelType::i32: return "int32";
        case PixelType::f32: return "float32";
    }
    return "unknown";
}

std::size_t bytes_per_pixel(PixelType t) {
    switch (t) {
        case PixelType::u8: return 1;
        case PixelType::u16: case PixelType::i16: return 2;
        case PixelType::i32: case PixelType::f32: return 4;
    }
    return 1;
}

ImageF RawFrame::to_float() const {
    ImageF out = ImageF::for_overwrite(width, height, depth);
    float* to = out.pixels.data();
    const long long n = (long long)(out.pixels.size());
    visit_pixels(*this, [&](const auto* p) {
#pragma omp parallel for schedule(static) if (parallel_filter(std::size_t(n)))
        for (long long i = 0; i < n; ++i) to[i] = float(p[i]);
    });
    return out;
}

double RawFrame::mean() const {
    double sum = 0;
    visit_pixels(*this, [&](const auto* p) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(p)>>;
        const std::size_t n = pixel_count();
        if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
            // An integer sum (vectorised) equals the double sum in pixel
            // order here: every partial sum is an integer below 2^53.
            std::int64_t whole = 0;
            for (std::size_t i = 0; i < n; ++i) whole += p[i];
            sum = double(whole);
        } else {
            for (std::size_t i = 0; i < n; ++i) sum += double(p[i]);
        }
    });
    return pixel_count() ? sum / double(pixel_count()) : 0.0;
}

bool parallel_filter(std::size_t pixels) {
    return pixels >= (std::size_t(1) << 16) || (omp_get_max_threads() >= 4 && pixels >= (std::size_t(1) << 14));
}

namespace {
// Frames this large are checked and binned by the caller's OpenMP threads;
// smaller ones by the caller alone (a parallel region costs more than them).
constexpr std::size_t kParallelPixels = std::size_t(1) << 18;
constexpr std::size_t kChunk = std::size_t(1) << 16;

// Lowest and highest finite value and the count of non-finite ones, in the
// pixels' own type and without branches (integer frames vectorise).
template <typename T>
struct Extent {
    T lo, hi;
    std::size_t bad = 0;
};
template <typename T>
Extent<T> extent_of(const T* p, std::size_t n) {
    if constexpr (std::is_integral_v<T>) {
        T l = p[0], h = p[0];
        for (std::size_t i = 0; i < n; ++i) l = p[i] < l ? p[i] : l, h = p[i] > h ? p[i] : h;
        return {l, h, 0};
    } else {
        T l = INFINITY, h = -INFINITY;
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const T v = p[i];
            const bool finite = std::fabs(v) <= std::numeric_limits<T>::max();  // false for NaN and inf
            bad += !finite;
            l = finite && v < l ? v : l;
            h = finite && v > h ? v : h;
        }
        return {l, h, bad};
    }
}
}  // namespace

std::string frame_problem(const RawFrame& frame) {
    std::size_t non_finite = 0;
    double lo = INFINITY, hi = -INFINITY;
    // Every view is checked before its search (a double per pixel took 3 ms
    // per 1024^2 frame); minimum, maximum and count do not depend on the
    // order, so chunks may be checked in parallel.
    visit_pixels(frame, [&](const auto* p) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(p)>>;
        const std::size_t n = frame.pixel_count();
        if (n == 0) return;
        const std::ptrdiff_t chunks = std::ptrdiff_t((n + kChunk - 1) / kChunk);
        Extent<T> all = extent_of(p, std::min(n, kChunk));
#pragma omp parallel for if (n >= kParallelPixels) schedule(static)
        for (std::ptrdiff_t c = 1; c < chunks; ++c) {
            const std::size_t from = std::size_t(c) * kChunk;
            const Extent<T> e = extent_of(p + from, std::min(kChunk, n - from));
#pragma omp critical(frame_problem_merge)
            {
                all.lo = std::min(all.lo, e.lo), all.hi = std::max(all.hi, e.hi);
                all.bad += e.bad;
            }
        }
        non_finite = all.bad;
        if (all.lo <= all.hi) lo = double(all.lo), hi = double(all.hi);
    });
    std::ostringstream o;
    if (non_finite) o << non_finite << " of " << frame.pixel_count() << " pixels are NaN or infinite";
    if (lo > hi) return o.str();  // nothing finite at all
    if (lo == hi) {
        if (non_finite) o << "; the others are all " << lo;
        else if (lo == 0) o << "empty: every pixel is 0";
        else o << "constant: every pixel is " << lo;
    }
    return o.str();
}

RawFrame block_mean(const RawFrame& frame, int f) {
    f = std::max(f, 1);
    const int ow = frame.width / f, oh = frame.height / f;
    RawFrame out{PixelType::f32, ow, oh, 1, std::vector<unsigned char>(std::size_t(ow) * oh * sizeof(float))};
    auto* o = reinterpret_cast<float*>(out.bytes.data());
    // Straight from the pixels (no float copy of the frame), a row of blocks
    // at a time; each block adds its pixels as floats, in double, row by
    // row. 2 x 2 blocks (the coarse search's) keep their sum in a register:
    // through a row of sums in memory they were a tenth of a small frame's
    // load (bench/probes/load_steps.cpp).
    visit_pixels(frame, [&](const auto* p) {
#pragma omp parallel for if (std::size_t(ow) * oh * f * f >= kParallelPixels) schedule(static)
        for (int y = 0; y < oh; ++y) {
            float* to = o + std::size_t(y) * ow;
            if (f == 2) {
                const auto* r0 = p + std::size_t(y * 2) * frame.width;
                const auto* r1 = r0 + frame.width;
                for (int x = 0; x < ow; ++x) {
                    const double s = ((0.0 + double(float(r0[2 * x]))) + double(float(r0[2 * x + 1]))) +
                                     double(float(r1[2 * x])) + double(float(r1[2 * x + 1]));
                    to[x] = float(s / 4);
                }
                continue;
            }
            std::vector<double> sums(ow, 0.0);
            for (int j = 0; j < f; ++j) {
                const auto* row = p + std::size_t(y * f + j) * frame.width;
                for (int x = 0; x < ow; ++x) {
                    double s = sums[x];
                    for (int i = 0; i < f; ++i) s += double(float(row[x * f + i]));
                    sums[x] = s;
                }
            }
            for (int x = 0; x < ow; ++x) to[x] = float(sums[x] / (f * f));
        }
    });
    return out;
}

}  // namespace stackalign
