#include "image.hpp"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <sstream>

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
        for (std::size_t i = 0, n = pixel_count(); i < n; ++i) sum += double(p[i]);
    });
    return pixel_count() ? sum / double(pixel_count()) : 0.0;
}

std::string frame_problem(const RawFrame& frame) {
    std::size_t non_finite = 0;
    double lo = INFINITY, hi = -INFINITY;
    visit_pixels(frame, [&](const auto* p) {
        for (std::size_t i = 0, n = frame.pixel_count(); i < n; ++i) {
            const double v = double(p[i]);
            if (!std::isfinite(v)) {
                ++non_finite;
                continue;
            }
            lo = std::min(lo, v);
            hi = std::max(hi, v);
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
