// Moving frames by their offsets, in their own pixel type.
#pragma once
#include "image.hpp"

namespace stackalign {

// Returns the frame moved by (-dx, -dy): out(x, y) = in(x + dx, y + dy).
// Integer shifts copy pixels exactly; fractional ones interpolate bilinearly
// and round to the pixel type. Pixels with no source are set to `fill`.
RawFrame shift_frame(const RawFrame& in, double dx, double dy, double fill);

}  // namespace stackalign
