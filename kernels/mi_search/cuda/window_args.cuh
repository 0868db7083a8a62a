// What every MI search kernel is given: both images on the device, the
// windows and the shift range.
#pragma once
#include <cstdint>

#include "../mi_search.hpp"

namespace stackalign::cuda {

// A bin image (or volume) on the device: rows of `pitch` bytes, `height` rows per slice.
struct DeviceImage {
    const std::uint8_t* data;
    int pitch, height;
};

struct WindowArgs {
    const std::uint8_t* ref;
    const std::uint8_t* mov;
    int ref_pitch, ref_height;          // row length and rows per slice of each image
    int mov_pitch, mov_height;
    const WindowCorner* corners;        // one per searched window (landmarks: per point)
    int ww, wh, wd;                     // window size
    int mx, my, mz, side_x, side_y;     // shift half-ranges; candidates per row and per plane
    int cx, cy, cz;                     // the range's centre (MiSearchParams::centre)
    ShiftStep step;                     // pixels between neighbouring candidates
    int candidates, bins;               // candidates per window
    Metric metric;
};

}  // namespace stackalign::cuda
