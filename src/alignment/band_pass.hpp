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

// v smoothed by a Gaussian of `sigma` pixels (separable, edges repeated).
std::vector<float> smoothed(const ImageF& v, double sigma);

// The normalised Gaussian taps of `sigma` px that band_pass blurs with: 2 r
// + 1 of them into k (room for 63), r returned; sigma at most 10 px.
int gaussian_taps(double sigma, float* k);

}  // namespace stackalign
