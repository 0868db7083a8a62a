#include "refine_smoothing.hpp"

#include <algorithm>
#include <cstdio>

#include "../../src/alignment/noise_level.hpp"

namespace stackalign {

// Frames measured: spread over the series, few enough that the pass costs
// a few milliseconds (a 256 x 256 crop of each).
constexpr int kNoiseFrames = 8;

float smoothing_for_noise(double ratio) {
    constexpr double clean = 0.12, noisy = 0.32, least = kRefineSigmaClean;
    const double t = std::clamp((ratio - clean) / (noisy - clean), 0.0, 1.0);
    return float(least + t * (double(kRefineSigma) - least));
}

StackPlan resolve_refine_smoothing(const StackPlan& plan, FrameReader& frames, Verbosity verbosity) {
    if (!plan.refine_sigma_auto) return plan;
    const int kept = int(plan.kept.size()), n = std::min(kept, kNoiseFrames);
    std::vector<double> ratios;
    for (int i = 0; i < n; ++i) {
        const int view = plan.kept[std::size_t(i) * (kept - 1) / std::max(n - 1, 1)];
        ratios.push_back(noise_to_contrast(*frames.read(view)));
    }
    StackPlan out = plan;
    out.refine_noise = series_noise(ratios);
    out.setup.refine_sigma = smoothing_for_noise(out.refine_noise);
    char line[160];
    std::snprintf(line, sizeof line,
                  "refinement smoothing: %.2f px (noise %.3f of the frames' contrast, the least of %d frames)",
                  out.setup.refine_sigma, out.refine_noise, n);
    log_line(verbosity, line);
    return out;
}

}  // namespace stackalign
