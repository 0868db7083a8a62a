// A view's structure for comparing views of a tilt series: a difference of
// Gaussians keeps edges and texture and drops the slow shading that a
// tilt changes (the tilt axis's candidates and its feature tracks compare
// views so).
#pragma once
#include <vector>

#include "../core/image.hpp"

namespace stackalign {

// v smoothed by a Gaussian of `fine` pixels less v smoothed by one of
// `coarse` (separable, edges repeated), row-major like v.
std::vector<float> band_pass(const ImageF& v, double fine = 1.0, double coarse = 4.0);

}  // namespace stackalign
