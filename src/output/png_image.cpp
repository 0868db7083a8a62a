#include "png_image.hpp"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "../core/error.hpp"

namespace stackalign {

std::vector<unsigned char> encode_png_gray(const Image<std::uint8_t>& image) {
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    png.width = png_uint_32(image.width);
    png.height = png_uint_32(image.height);
    png.format = PNG_FORMAT_GRAY;
    png_alloc_size_t size = 0;
    // First call sizes the buffer, second fills it.
    if (!png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), 0, nullptr))
        throw InternalError(std::string("PNG encoding failed: ") + png.message);
    std::vector<unsigned char> out(size);
    if (!png_image_write_to_memory(&png, out.data(), &size, 0, image.pixels.data(), 0, nullptr))
        throw InternalError(std::string("PNG encoding failed: ") + png.message);
    out.resize(size);
    return out;
}

Image<std::uint8_t> decode_png_gray(const std::vector<unsigned char>& bytes) {
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()))
        throw InputError(std::string("not a readable PNG: ") + png.message);
    png.format = PNG_FORMAT_GRAY;
    Image<std::uint8_t> out(int(png.width), int(png.height));
    if (!png_image_finish_read(&png, nullptr, out.pixels.data(), 0, nullptr))
        throw InputError(std::string("not a readable PNG: ") + png.message);
    return out;
}

ThumbnailScale thumbnail_scale(const RawFrame& frame) {
    auto v = frame.to_float().pixels;
    const std::size_t lo = v.size() / 100, hi = v.size() - 1 - v.size() / 100;
    std::nth_element(v.begin(), v.begin() + lo, v.end());
    const float a = v[lo];
    std::nth_element(v.begin(), v.begin() + hi, v.end());
    return {a, v[hi]};
}

Image<std::uint8_t> thumbnail(const RawFrame& frame, const ThumbnailScale& s, int max_side) {
    const float lo = s.lo, hi = s.hi;
    const ImageF in = frame.to_float();
    const int step = std::max(1, (std::max(in.width, in.height) + max_side - 1) / max_side);
    Image<std::uint8_t> out(std::max(1, in.width / step), std::max(1, in.height / step));
    const double scale = hi > lo ? 255.0 / (hi - lo) : 0.0;
    for (int y = 0; y < out.height; ++y)
        for (int x = 0; x < out.width; ++x) {
            double sum = 0;
            for (int j = 0; j < step; ++j)
                for (int i = 0; i < step; ++i) sum += in.at(x * step + i, y * step + j);
            const double v = (sum / (step * step) - lo) * scale;
            out.at(x, y) = std::uint8_t(std::clamp(std::lround(v), 0L, 255L));
        }
    return out;
}

std::string base64(const std::vector<unsigned char>& b) {
    static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((b.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < b.size(); i += 3) {
        const std::uint32_t v = std::uint32_t(b[i]) << 16 | (i + 1 < b.size() ? std::uint32_t(b[i + 1]) << 8 : 0) |
                                (i + 2 < b.size() ? b[i + 2] : 0);
        out += t[v >> 18];
        out += t[(v >> 12) & 63];
        out += i + 1 < b.size() ? t[(v >> 6) & 63] : '=';
        out += i + 2 < b.size() ? t[v & 63] : '=';
    }
    return out;
}

}  // namespace stackalign
