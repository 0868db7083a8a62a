// TIFF reading and writing through libtiff. Readers accept grayscale 8/16-bit
// unsigned, 16/32-bit signed and 32-bit float, striped or tiled, classic or
// BigTIFF; anything else is an InputError naming the file and page.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../core/image.hpp"

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

// Pages read one at a time, in any order (a stack larger than memory).
class TiffPages {
public:
    explicit TiffPages(const std::string& path);
    ~TiffPages();
    RawFrame read(int page);

private:
    struct Impl;
    std::string path_;
    std::unique_ptr<Impl> impl_;
};

// Pages written one at a time; BigTIFF when total_bytes needs it.
class TiffStackWriter {
public:
    TiffStackWriter(const std::string& path, int pages, std::uint64_t total_bytes);
    ~TiffStackWriter();
    void append(const RawFrame& frame);
    void close();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Writes a volume as one page per z slice.
void write_tiff_volume(const std::string& path, const RawFrame& volume);

// Writes all frames as one multi-page TIFF (BigTIFF when over 2 GiB) to
// `path` directly; callers that need atomicity write to a temporary name.
void write_tiff_stack(const std::string& path, const std::vector<RawFrame>& frames);

}  // namespace stackalign
