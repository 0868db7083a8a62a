// `bench coarse`: the evidence for (or against) searching coarse to fine.
// The exhaustive window search scores every shift in range at full
// resolution; the CPU spends most of a job there (issue #19).
// [search] coarse_to_fine (pipelines/stages/coarse_to_fine.hpp) scores the
// range on 2x2 block means, then full-resolution shifts within 2 px of that
// peak and scores the sharpness lattice at full resolution. This prints,
// for the sample configs' real stacks and pairs 1 to `gaps` frames apart,
// how often both searchers find the same integer peak, how often they also
// give the same sharpness (the flags' statistic: the same bits expected),
// the pairs where the peaks differ (with the exhaustive peak's sharpness:
// below min_sharpness such a pair is flagged weak anyway), and both
// searches' CPU time in the same run (loads not counted).
#include "coarse.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <cstdio>
#include <string>
#include <vector>

#include "../kernels/pair_searcher.hpp"
#include "../pipelines/plan/stack_plan.hpp"
#include "../pipelines/stages/coarse_to_fine.hpp"
#include "../src/config/config.hpp"
#include "../src/io/stack_io.hpp"

namespace stackalign::bench {
namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

void compare(const char* config, int gaps) {
    const StackPlan plan = plan_stack(load_config(config), RunOptions{});
    FrameReader frames(plan.files, std::size_t(1) << 32);
    const Device cpu{};
    const std::unique_ptr<PairSearcher> exhaustive = make_pair_searcher(cpu, plan.setup);
    const std::unique_ptr<PairSearcher> c2f =
        make_coarse_to_fine(cpu, plan.setup, SearcherPriority::normal, 2, plan.width, plan.height);
    const LoadOptions search_only = load_options(false, false);
    const MiSearchParams& p = plan.setup.search;
    int pairs = 0, same = 0, same_sharpness = 0, weak_misses = 0;
    double exhaustive_ms = 0, c2f_ms = 0, lo = 1e300, hi = 0;
    std::vector<std::string> misses;
    for (int gap = 1; gap <= gaps; ++gap)
        for (int i = 0; i + gap < plan.frames; ++i) {
            for (PairSearcher* s : {exhaustive.get(), c2f.get()}) {
                s->load(0, *frames.read(i), search_only);
                s->load(1, *frames.read(i + gap), search_only);
            }
            auto t = Clock::now();
            const MiPeak e = exhaustive->search(0, 1);
            exhaustive_ms += ms_since(t);
            t = Clock::now();
            const MiPeak c = c2f->search(0, 1);
            c2f_ms += ms_since(t);
            ++pairs;
            lo = std::min(lo, e.sharpness()), hi = std::max(hi, e.sharpness());
            if (c.dx == e.dx && c.dy == e.dy) {
                ++same;
                same_sharpness += c.sharpness() == e.sharpness();
                continue;
            }
            weak_misses += e.sharpness() < plan.flags.min_sharpness;
            char line[160];
            std::snprintf(line, sizeof line, "%d-%d: exhaustive (%d, %d), sharpness %.2f; coarse to fine (%d, %d)", i,
                          i + gap, e.dx, e.dy, e.sharpness(), c.dx, c.dy);
            misses.push_back(line);
        }
    std::printf("| %s | %d x %dx%d, window %dx%d, +-%d px | %d | %d | %d | %d | %.1f-%.1f | %.0f / %.0f = %.1fx |\n",
                config, plan.frames, plan.width, plan.height, p.window.width, p.window.height, p.max_shift.x, pairs,
                same, same_sharpness, weak_misses, lo, hi, exhaustive_ms, c2f_ms, exhaustive_ms / c2f_ms);
    for (const std::string& m : misses) std::printf("|   %s | | | | | | | |\n", m.c_str());
}
}  // namespace

void coarse() {
    std::printf("## Coarse to fine against the exhaustive search (CPU)\n\n"
                "| config | stack, search | pairs | same integer peak | of those, same sharpness | misses below "
                "min_sharpness | sharpness | CPU ms exhaustive / coarse to fine |\n"
                "|---|---|---|---|---|---|---|---|\n");
    compare("configs/sample_timelapse.toml", 6);
    compare("configs/sample_tilt_series.toml", 3);
}

}  // namespace stackalign::bench
