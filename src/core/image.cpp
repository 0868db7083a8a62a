#include "image.hpp"

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
    ImageF out = ImageF::volume(width, height, depth);
    visit_pixels(*this, [&](const auto* p) {
        for (std::size_t i = 0; i < out.pixels.size(); ++i) out.pixels[i] = float(p[i]);
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

std::string frame_problem(const RawFrame& frame) {
    std::size_t non_finite = 0;
    double lo = INFINITY, hi = -INFINITY;
    // In the pixels' own type, without branches, so the loops vectorise
    // (every view is checked before its search: a double per pixel took
    // 3 ms per 1024^2 frame).
    visit_pixels(frame, [&](const auto* p) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(p)>>;
        const std::size_t n = frame.pixel_count();
        if (n == 0) return;
        if constexpr (std::is_integral_v<T>) {
            T l = p[0], h = p[0];
            for (std::size_t i = 0; i < n; ++i) l = p[i] < l ? p[i] : l, h = p[i] > h ? p[i] : h;
            lo = double(l), hi = double(h);
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
            non_finite = bad;
            if (l <= h) lo = double(l), hi = double(h);
        }
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

ImageF block_mean(const ImageF& in, int f) {
    if (f <= 1) return in;
    ImageF out(in.width / f, in.height / f);
    for (int y = 0; y < out.height; ++y)
        for (int x = 0; x < out.width; ++x) {
            double s = 0;
            for (int j = 0; j < f; ++j)
                for (int i = 0; i < f; ++i) s += in.at(x * f + i, y * f + j);
            out.at(x, y) = float(s / (f * f));
        }
    return out;
}

RawFrame block_mean(const RawFrame& frame, int f) {
    const ImageF m = block_mean(frame.to_float(), f);
    RawFrame out{PixelType::f32, m.width, m.height, 1, std::vector<unsigned char>(m.pixels.size() * sizeof(float))};
    std::memcpy(out.bytes.data(), m.pixels.data(), out.bytes.size());
    return out;
}

}  // namespace stackalign
