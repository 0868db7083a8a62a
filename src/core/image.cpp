#include "image.hpp"

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

}  // namespace stackalign
