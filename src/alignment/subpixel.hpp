// Refining an integer peak between the candidates around it.
#pragma once

namespace stackalign {

// Parabola through three equally spaced samples: the peak's offset from the
// middle one, in [-0.5, 0.5]; 0 when the samples do not form a maximum.
double parabolic_offset(double left, double centre, double right);

}  // namespace stackalign
