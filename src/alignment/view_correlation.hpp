// How the slab method of tilt_axis.hpp compares two views: view `view`
// stretched by S about its centre (bilinear), then both weighted by the
// tapered circle (circle_taper) about their weighted means, zero-padded
// onto an n x n grid (correlation_grid: no padding for the lags, as the
// taper leaves the grid's rim empty, so what wraps around at a few pixels'
// lag is nearly nothing), and their normalised cross-correlation at the
// best shift within +-max_lag (FFT), refined by a parabola through the
// peak's neighbours per axis. kernels/view_correlation holds the CPU and
// CUDA twins: the estimates make thousands of these, batched.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "tilt_geometry.hpp"

namespace stackalign {

struct StretchedPair {
    int view = 0;     // stretched by `stretch`
    int to = 0;       // the view it is compared with, as it is
    Stretch stretch;
};

class ViewCorrelator {
public:
    virtual ~ViewCorrelator() = default;
    // Each pair's normalised correlation, in the pairs' order.
    virtual std::vector<double> correlate(const std::vector<StretchedPair>& pairs) = 0;
};

// `views`: band-passed, each width x height, row-major.
using MakeViewCorrelator = std::function<std::unique_ptr<ViewCorrelator>(
    const std::vector<std::vector<float>>& views, int width, int height, int max_lag)>;

// The tapered circle's weight at each pixel of a w x h view: 1 inside, a
// raised cosine over its outer 8 px, 0 beyond.
std::vector<double> circle_taper(int w, int h);
// The side of the square grid the views are correlated on: the power of two that holds them.
int correlation_grid(int w, int h);
// The lags searched on an n x n grid: at most `max_lag`, and short of the
// grid's wrap-around for the peak's neighbours.
int usable_lag(int max_lag, int n);

}  // namespace stackalign
