// How the GPU fills each candidate's histogram, as plain printable data
// chosen by one function from the problem and the device (CUB's histogram
// does the same): bins go to shared memory unless they do not fit. Tuned
// numbers name the benchmark that produced them.
#pragma once
#include <string>
#include <vector>

#include "mi_search.hpp"

namespace stackalign::cuda {

// Block sizes of the strategy kernels (the kernels' CUB reductions are
// instantiated for these).
constexpr int kSharedThreads = 512;     // shared, replicated
constexpr int kAdaptiveThreads = 512;   // adaptive
constexpr int kGlobalThreads = 256;     // zero-slot and the score pass over global histograms
constexpr int kCrThreads = 256;         // presorted segment sums, cr-atomic
constexpr int kPeakThreads = 1024;      // winner selection, one block per window

struct HistogramPolicy {
    // zero_slot | shared | replicated | adaptive | bin_partitioned (sampled
    // when the parameters' sample_stride > 1); CR only: presorted | cr_atomic.
    HistogramStrategy strategy = HistogramStrategy::shared;
    int threads = 256;             // per block; one block per candidate window
    int smem_bytes = 0;            // dynamic shared memory per block
    int copies = 1;                // histogram replicas per block (replicated)
    int candidates_per_launch = 0; // zero-slot, adaptive: global histograms are made in chunks of this many
    int row_stride = 0;            // shared/replicated: words per histogram row (padded)
    int adaptive_capacity = 0;     // adaptive: shared slots a block may give to cached bins
    int workload = 0;              // presorted: most pixels per block (one bin's run segment)
    std::string describe() const;
};

// Exact strategies that fit this problem on this device, in the order
// `make bench-gpu` ranked them on an H100 (docs/benchmarks.md); with
// sample_stride > 1 only bin_partitioned, which then samples.
std::vector<HistogramStrategy> available_strategies(const MiSearchParams& p, int gpu);
// Those `automatic` times on the first pair: all but bin_partitioned, which
// scans every pixel once per thread and is there to be compared, not chosen.
std::vector<HistogramStrategy> auto_strategies(const MiSearchParams& p, int gpu);
// The policy of `requested` (automatic: the first available) for this
// problem and device; UnsupportedError when it cannot run it.
// `presorted_workload` > 0 overrides the presorted pixels per block (bench/).
HistogramPolicy choose_policy(const MiSearchParams& p, HistogramStrategy requested, int gpu, int presorted_workload = 0);

}  // namespace stackalign::cuda
