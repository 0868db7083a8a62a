// The twins of src/alignment/view_correlation.hpp's comparison: thousands
// of stretched views correlated with their partners for the tilt axis's and
// offset's first estimates. The CPU twin transforms each pair on a thread
// (Eigen's FFT); the CUDA twin a batch of pairs at once (cuFFT), the views
// and their partners' spectra kept on the GPU for the estimate.
//
// The twins sample alike (stretch_sample.hpp) but their transforms and sums
// round differently: the scores agree to about 1e-15, and the estimates
// keep their angles to a grid far finer than their errors so that both
// backends place the axis alike (src/alignment/tilt_axis.cpp).
#pragma once
#include <memory>
#include <vector>

#include "../../src/alignment/view_correlation.hpp"
#include "../backend.hpp"

namespace stackalign {

std::unique_ptr<ViewCorrelator> make_view_correlator(const std::vector<std::vector<float>>& views, int width,
                                                     int height, int max_lag, const Device& device);

namespace cpu {
std::unique_ptr<ViewCorrelator> make_view_correlator(const std::vector<std::vector<float>>& views, int width,
                                                     int height, int max_lag);
}
namespace cuda {
std::unique_ptr<ViewCorrelator> make_view_correlator(const std::vector<std::vector<float>>& views, int width,
                                                     int height, int max_lag, int gpu);
}

}  // namespace stackalign
