// 8-bit grayscale PNG in memory through libpng's simplified API (no
// setjmp/longjmp in our code), for the thumbnails report.html embeds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "../core/image.hpp"

namespace stackalign {

std::vector<unsigned char> encode_png_gray(const Image<std::uint8_t>& image);
Image<std::uint8_t> decode_png_gray(const std::vector<unsigned char>& png);  // tests

// The values a thumbnail maps to 0 and 255: a frame's 1st and 99th
// percentiles (before/after thumbnails share the input's).
struct ThumbnailScale {
    float lo = 0, hi = 0;
};
ThumbnailScale thumbnail_scale(const RawFrame& frame);
// A frame scaled into 0..255 by `scale`, box-averaged down to at most
// max_side pixels on its longer side.
Image<std::uint8_t> thumbnail(const RawFrame& frame, const ThumbnailScale& scale, int max_side);

std::string base64(const std::vector<unsigned char>& bytes);

}  // namespace stackalign
