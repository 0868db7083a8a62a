// One place that knows which file format a stack is in: multi-page TIFF or
// MRC (by suffix, see is_mrc_path). The pipeline reads and writes through
// here and never asks which.
#pragma once
#include <string>
#include <vector>

#include "image.hpp"

namespace stackalign {

struct StackInfo {
    std::string format;          // "tiff" | "mrc"
    int frames = 0, width = 0, height = 0;
    PixelType type = PixelType::u8;
    double pixel_size = 0;       // Angstrom per pixel (MRC cell); 0 = not recorded
    int mrc_mode = -1;           // MRC input: its mode, so output can keep it
    bool signed_bytes = false;
};

StackInfo probe_stack_file(const std::string& path);
Stack read_stack_file(const std::string& path);

// Writes frames as `format`. MRC output keeps `like`'s mode when `like` is
// MRC and the frames' type matches it, else the mode for the frames' type;
// the pixel size goes into the MRC cell.
void write_stack_file(const std::string& path, const std::vector<RawFrame>& frames, const std::string& format,
                      const StackInfo& like);

}  // namespace stackalign
