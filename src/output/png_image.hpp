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

// A frame scaled into 0..255 between its 1st and 99th percentiles (or
// those of `scale_like`, so before/after thumbnails share one scale), box-
// averaged down to at most max_side pixels on its longer side.
Image<std::uint8_t> thumbnail(const RawFrame& frame, const RawFrame& scale_like, int max_side);

std::string base64(const std::vector<unsigned char>& bytes);

}  // namespace stackalign
