// TIFF reading and writing through libtiff. Readers accept grayscale 8/16-bit
// unsigned, 16/32-bit signed and 32-bit float, striped or tiled, classic or
// BigTIFF; anything else is an InputError naming the file and page.
#pragma once
#include <string>
#include <vector>

#include "image.hpp"

namespace stackalign {

// Every page of a multi-page TIFF; all pages must share one size and type.
Stack read_tiff_stack(const std::string& path);

// A 3D volume from a multi-page TIFF: pages are z, in file order.
RawFrame read_tiff_volume(const std::string& path);

// One frame per file, in the given order (first page of each file).
Stack read_tiff_files(const std::vector<std::string>& paths);

// Number of pages, size and type without reading pixel data.
struct TiffInfo {
    int pages = 0;
    int width = 0;
    int height = 0;
    PixelType type = PixelType::u8;
};
TiffInfo probe_tiff(const std::string& path);

// Writes a volume as one page per z slice.
void write_tiff_volume(const std::string& path, const RawFrame& volume);

// Writes all frames as one multi-page TIFF (BigTIFF when over 2 GiB) to
// `path` directly; callers that need atomicity write to a temporary name.
void write_tiff_stack(const std::string& path, const std::vector<RawFrame>& frames);

}  // namespace stackalign
