// Refining an integer peak between the candidates around it.
#pragma once

#include "../core/host_device.hpp"

namespace stackalign {

// Parabola through three equally spaced samples: the peak's offset from the
// middle one, in [-0.5, 0.5]; 0 when the samples do not form a maximum or
// a side is not finite (the peak on the edge of the search square). One
// text for the host and the GPU twins that refine a peak.
STACKALIGN_HD inline double parabolic_offset(double l, double c, double r) {
    if (!(l - l == 0) || !(r - r == 0)) return 0.0;  // x - x is 0 only for a finite x
    const double curvature = l - 2 * c + r;
    if (!(curvature < 0)) return 0.0;  // flat or not a maximum
    const double o = 0.5 * (l - r) / curvature;
    return o < -0.5 ? -0.5 : o > 0.5 ? 0.5 : o;
}

}  // namespace stackalign
