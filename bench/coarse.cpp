// `bench coarse`: the evidence for (or against) searching coarse to fine.
// The exhaustive window search scores every shift in range at full
// resolution; the CPU spends most of a job there (issue #19). A
// coarse-to-fine search would score the range on 2x2 block means (the
// rigid search's coarse level, coarse_setup), then full-resolution shifts
// within 2 px of the coarse peak, moving on while the best of them is on
// that reach's rim. This prints, for the sample configs' real stacks and
// pairs 1 to `gaps` frames apart, how often both find the same integer
// peak, the pairs where they do not (with the exhaustive peak's sharpness:
// below min_sharpness such a pair is flagged weak anyway), each search's
// own sharpness (the flags' statistic, which the coarse map does not
// reproduce), and both searches' CPU time in the same run.
#include "coarse.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "../kernels/mi_search/mi_search.hpp"
#include "../pipelines/plan/stack_plan.hpp"
#include "../pipelines/stages/search_motion.hpp"
#include "../src/config/config.hpp"
#include "../src/io/stack_io.hpp"

namespace stackalign::bench {
namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Found {
    int dx = 0, dy = 0;
    double sharpness = 0;
};

// Full-resolution shifts within `reach` of `bin` x the coarse peak, again
// about the best one while it is on the reach's rim (not the range's).
Found coarse_to_fine(const BinImage& ref, const BinImage& mov, const BinImage& coarse_ref, const BinImage& coarse_mov,
                     const MiSearchParams& fine, const MiSearchParams& coarse, int bin) {
    const MiPeak c = cpu::mi_search(coarse_ref, coarse_mov, coarse);
    const int reach = 2, m = fine.max_shift.x;
    int x = c.dx * bin, y = c.dy * bin;
    for (int round = 0; round < 8; ++round) {
        MiSearchParams near = fine;
        near.max_shift = {reach, reach, 0};
        near.centre = {std::clamp(x, reach - m, m - reach), std::clamp(y, reach - m, m - reach), 0};
        const MiPeak f = cpu::mi_search(ref, mov, near);
        x = near.centre.x + f.dx, y = near.centre.y + f.dy;
        const bool rim = (std::abs(f.dx) == reach && std::abs(x) < m) || (std::abs(f.dy) == reach && std::abs(y) < m);
        if (!rim) break;
    }
    return {x, y, c.sharpness()};
}

void compare(const char* config, int gaps) {
    const StackPlan plan = plan_stack(load_config(config), RunOptions{});
    FrameReader frames(plan.files, std::size_t(1) << 32);
    const int bin = 2;
    const SearchSetup coarse_setup_ = coarse_setup(plan.setup, bin, plan.width, plan.height);
    std::vector<BinImage> full, coarse;
    for (int k = 0; k < plan.frames; ++k) {
        const std::shared_ptr<const RawFrame> f = frames.read(k);
        full.push_back(cpu::preprocess(*f, plan.setup.preprocess));
        coarse.push_back(cpu::preprocess(block_mean(*f, bin), plan.setup.preprocess));
    }
    const MiSearchParams& p = plan.setup.search;
    const double min_sharpness = plan.flags.min_sharpness;
    int pairs = 0, same = 0, weak_misses = 0;
    double exhaustive_ms = 0, c2f_ms = 0;
    std::vector<std::string> misses;
    std::vector<std::pair<double, double>> sharpness;
    for (int gap = 1; gap <= gaps; ++gap)
        for (int i = 0; i + gap < plan.frames; ++i) {
            auto t = Clock::now();
            const MiPeak e = cpu::mi_search(full[i], full[i + gap], p);
            exhaustive_ms += ms_since(t);
            t = Clock::now();
            const Found c = coarse_to_fine(full[i], full[i + gap], coarse[i], coarse[i + gap], p,
                                           coarse_setup_.search, bin);
            c2f_ms += ms_since(t);
            ++pairs;
            sharpness.push_back({e.sharpness(), c.sharpness});
            if (c.dx == e.dx && c.dy == e.dy) {
                ++same;
                continue;
            }
            weak_misses += e.sharpness() < min_sharpness;
            char line[160];
            std::snprintf(line, sizeof line, "%d-%d: exhaustive (%d, %d), sharpness %.2f; coarse to fine (%d, %d)", i,
                          i + gap, e.dx, e.dy, e.sharpness(), c.dx, c.dy);
            misses.push_back(line);
        }
    double lo = 1e300, hi = 0, clo = 1e300, chi = 0;
    for (const auto& [e, c] : sharpness) lo = std::min(lo, e), hi = std::max(hi, e), clo = std::min(clo, c), chi = std::max(chi, c);
    std::printf("| %s | %d x %dx%d, window %dx%d, +-%d px, coarse +-%d | %d | %d | %d | %.1f-%.1f | %.1f-%.1f | %.0f / %.0f = %.1fx |\n",
                config, plan.frames, plan.width, plan.height, p.window.width, p.window.height, p.max_shift.x,
                coarse_setup_.search.max_shift.x, pairs, same, weak_misses, lo, hi, clo, chi, exhaustive_ms, c2f_ms,
                exhaustive_ms / c2f_ms);
    for (const std::string& m : misses) std::printf("|   %s | | | | | | | |\n", m.c_str());
}
}  // namespace

void coarse() {
    std::printf("## Coarse to fine against the exhaustive search (CPU)\n\n"
                "| config | stack, search | pairs | same integer peak | misses below min_sharpness | sharpness "
                "exhaustive | sharpness coarse map | CPU ms exhaustive / coarse to fine |\n"
                "|---|---|---|---|---|---|---|---|\n");
    compare("configs/sample_timelapse.toml", 6);
    compare("configs/sample_tilt_series.toml", 3);
}

}  // namespace stackalign::bench
