// What both twins of patch_tracks.hpp share on the host.
#include <algorithm>
#include <cmath>

#include "patch_tracks.hpp"
#include "track_steps.hpp"

namespace stackalign {

namespace {
constexpr int kMaxTracks = 100;  // patches tracked at most (a sparser grid on larger views)
}

// The axis's scatter is the tracks' drift, not their noise, so more of them
// help: on the bench's slab at 84 degrees (1000 photons) a dozen across gave
// 84.16 +- 0.14, 20 across 83.83 +- 0.10; the whole object there 83.68 +-
// 0.21 and 83.97 +- 0.08 (`python3 bench/tilt_accuracy.py --cases
// slab-oblique whole-oblique --variants 'axis=tilt_axis = "auto"'`). At most
// kMaxTracks of them: a 512^2 view held 361, and tracking them was 2.5 s of
// the H200 host's 16 cores, the rest of the job 0.44 s. Denser still was
// tried and is not kept: patches 8-12 px apart, up to 150-200 of them, put
// the bench's slab at 84 degrees within 0.05 (at the true offsets and
// axis the fit said 0.14 and 0.15 with 59 tracks, 0.00-0.04 with 104-153),
// but the real volume's projections of tests/test_tilt_axis.cpp at 84
// from 0.12 off to 0.16-0.26 off, with stated errors that shrank to
// 0.05-0.07: the scatter is the content's (a patch's place drifts as the
// depths it shows change), and overlapping tracks share it, which the
// jackknife over groups of tracks does not see.
std::vector<std::pair<double, double>> track_starts(int width, int height) {
    using tracks::kClear;
    using tracks::kPatch;
    const double cx = (width - 1) / 2.0, cy = (height - 1) / 2.0;
    const double reach_x = width / 2.0 - kPatch / 2.0 - kClear - 2, reach_y = height / 2.0 - kPatch / 2.0 - kClear - 2;
    int step = std::max(kPatch / 2, width / 20), nx = 0, ny = 0;
    for (;; ++step) {
        nx = int(reach_x / step), ny = int(reach_y / step);
        if ((2 * nx + 1) * (2 * ny + 1) <= kMaxTracks) break;
    }
    std::vector<std::pair<double, double>> starts;
    for (int j = -ny; j <= ny; ++j)
        for (int i = -nx; i <= nx; ++i) starts.push_back({cx + i * step, cy + j * step});
    return starts;
}

std::vector<double> track_cosines(const std::vector<double>& tilts_deg) {
    std::vector<double> c(tilts_deg.size());
    for (std::size_t i = 0; i < c.size(); ++i) c[i] = std::cos(tilts_deg[i] * M_PI / 180);
    return c;
}

}  // namespace stackalign
