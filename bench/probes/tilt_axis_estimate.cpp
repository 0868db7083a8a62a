// What `tilt_axis = "auto"`'s estimate costs: a thin slab's
// tilt series made from the real embryo frame (frame 8 of the sample
// time-lapse, foreshortened by cos(tilt) across an axis of 84 degrees,
// central 256 x 256, binned 2 x 2 to the 128 px the stage compares),
// VIEWS views from -60 to 60 degrees. Prints the seconds of each of ROUNDS
// estimates on THREADS threads, for stretched views and for common lines,
// and the estimate's axis, standard error and fine curve to 17 digits:
// what a faster estimate must give again (bit for bit where only the work
// done changes; to rounding where the arithmetic does: the half-spectrum
// transforms moved the axis by 1e-14 degrees and the curve by 1e-14).
// Build: g++ -O3 -std=c++17 -fopenmp -ffp-contract=off -fno-math-errno -I. -isystem /usr/include/eigen3 \
//        bench/probes/tilt_axis_estimate.cpp build/libstackalign.a -ltiff -lpng -lteem -lnifti2 -o build/tilt_axis_estimate
//        (with -L/usr/local/cuda/lib64 -lcudart -lcufft where the library was built with CUDA)
// Usage: tilt_axis_estimate [VIEWS [ROUNDS [THREADS]]]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "kernels/view_correlation/view_correlation.hpp"
#include "src/alignment/tilt_axis.hpp"
#include "src/core/image.hpp"
#include "src/io/tiff_io.hpp"

using namespace stackalign;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The frame foreshortened by k across the axis `a` (radians from y) about
// its centre, bilinear, then its central 256 x 256 binned 2 x 2.
ImageF slab_view(const ImageF& f, double a, double k) {
    const double px = std::cos(a), py = std::sin(a), cx = (f.width - 1) / 2.0, cy = (f.height - 1) / 2.0;
    ImageF out;
    out.width = 128, out.height = 128, out.depth = 1;
    out.pixels.assign(128 * 128, 0.0f);
    for (int y = 0; y < 256; ++y)
        for (int x = 0; x < 256; ++x) {
            const double dx = x + 128 - cx, dy = y + 128 - cy, along = dx * px + dy * py;
            const double u = cx + dx + (1 / k - 1) * along * px, v = cy + dy + (1 / k - 1) * along * py;
            const int x0 = std::clamp(int(std::floor(u)), 0, f.width - 2), y0 = std::clamp(int(std::floor(v)), 0, f.height - 2);
            const double fx = std::clamp(u - x0, 0.0, 1.0), fy = std::clamp(v - y0, 0.0, 1.0);
            const double s = (1 - fy) * ((1 - fx) * f.at(x0, y0, 0) + fx * f.at(x0 + 1, y0, 0)) +
                             fy * ((1 - fx) * f.at(x0, y0 + 1, 0) + fx * f.at(x0 + 1, y0 + 1, 0));
            out.pixels[std::size_t(y / 2) * 128 + x / 2] += float(s / 4);
        }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const int count = argc > 1 ? std::atoi(argv[1]) : 121, rounds = argc > 2 ? std::atoi(argv[2]) : 3;
    if (argc > 3) omp_set_num_threads(std::atoi(argv[3]));
    TiffPages pages("sample_data/drosophila_embryo_13x512x512.tif");
    const ImageF frame = pages.read(8).to_float();
    std::vector<ImageF> views;
    std::vector<double> tilts;
    for (int i = 0; i < count; ++i) {
        const double t = -60 + 120.0 * i / std::max(count - 1, 1);
        tilts.push_back(t);
        views.push_back(slab_view(frame, 84 * M_PI / 180, std::cos(t * M_PI / 180)));
    }
    int reference = 0;
    for (int i = 0; i < count; ++i)
        if (std::fabs(tilts[i]) < std::fabs(tilts[reference])) reference = i;
    for (bool slab : {true, false}) {
        std::printf("%s, %d views, %d threads:", slab ? "stretched views" : "common lines", count, omp_get_max_threads());
        TiltAxisEstimate e;
        for (int r = 0; r < rounds; ++r) {
            const auto t = Clock::now();
            e = estimate_tilt_axis(views, tilts, reference, 10, slab, [](const auto& v, int w, int h, int lag) {
                return make_view_correlator(v, w, h, lag, Device{});
            });
            std::printf(" %.3f", since(t));
        }
        std::printf(" s\n  axis %.17g +- %.17g, %d views\n  curve", e.axis_deg, e.standard_error, e.views);
        for (double s : e.scores) std::printf(" %.17g", s);
        std::printf("\n");
    }
}
