#include <algorithm>
#include <sstream>

#include "../cuda_common.cuh"
#include "mi_search_policy.cuh"

namespace stackalign::cuda {

std::string HistogramPolicy::describe() const {
    std::ostringstream o;
    o << "histogram policy {strategy: " << name_of(strategy) << ", threads/block: " << threads
      << ", shared bytes/block: " << smem_bytes;
    if (row_stride) o << ", row stride: " << row_stride << " words";
    if (workload) o << ", pixels/block: " << workload;
    if (copies > 1) o << ", replicas: " << copies;
    if (candidates_per_launch) o << ", candidates/launch: " << candidates_per_launch;
    o << "}";
    return o.str();
}

namespace {
// Largest dynamic shared memory one block may opt in to on this device.
std::size_t smem_optin(int gpu) {
    int bytes = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, gpu));
    return std::size_t(bytes);
}
// Words of one shared-memory histogram with padded rows (see hist_shared).
std::size_t padded_words(int bins) { return std::size_t(bins) * (bins + 1); }

bool fits_shared(const MiSearchParams& p, HistogramStrategy strategy, std::size_t limit) {
    const std::size_t bb = std::size_t(p.bins) * p.bins, padded = padded_words(p.bins) * 4;
    switch (strategy) {
        case HistogramStrategy::shared: return padded <= limit;
        case HistogramStrategy::replicated: return 2 * (padded + 4) <= limit;
        // The table and at least 1024 cache slots.
        case HistogramStrategy::adaptive: return (bb + 1024) * 4 <= limit;
        case HistogramStrategy::bin_partitioned: return bb * 4 + kPartitionThreads * 2 <= limit;
        default: return true;
    }
}
}  // namespace

std::vector<HistogramStrategy> available_strategies(const MiSearchParams& p, int gpu) {
    using H = HistogramStrategy;
    const std::size_t limit = smem_optin(gpu);
    std::vector<H> s;
    if (p.sample_stride > 1) {
        if (fits_shared(p, H::bin_partitioned, limit)) s.push_back(H::bin_partitioned);
        return s;
    }
    // In the order `make bench-gpu` ranked them on an H100 (docs/benchmarks.md);
    // "auto" times them on the first pair of a run (pair_searcher_cuda.cu).
    std::vector<H> all = {H::shared, H::replicated, H::zero_slot, H::adaptive, H::bin_partitioned};
    if (p.metric == Metric::cr) all.insert(all.begin(), {H::presorted, H::cr_atomic});
    for (const H name : all)
        if (fits_shared(p, name, limit)) s.push_back(name);
    return s;
}

std::vector<HistogramStrategy> auto_strategies(const MiSearchParams& p, int gpu) {
    std::vector<HistogramStrategy> s = available_strategies(p, gpu);
    if (p.sample_stride == 1) s.erase(std::remove(s.begin(), s.end(), HistogramStrategy::bin_partitioned), s.end());
    return s;
}

HistogramPolicy choose_policy(const MiSearchParams& p, HistogramStrategy requested, int gpu, int presorted_workload) {
    using H = HistogramStrategy;
    HistogramPolicy policy;
    policy.workload = presorted_workload;
    const H name = kernel_strategy(requested);
    if (computes_cr_only(name) && p.metric != Metric::cr)
        throw UnsupportedError("histogram strategy \"" + name_of(name) + "\" computes the correlation ratio only; it needs "
                               "[search] metric = \"cr\" (the metric is \"" + to_string(p.metric) + "\")");
    if (p.sample_stride > 1 && name != H::automatic && name != H::bin_partitioned)
        throw UnsupportedError("sampled histograms are made by the bin-partitioned strategy only, not \"" + name_of(name) + "\"");
    const std::vector<H> ok = available_strategies(p, gpu);
    if (ok.empty())
        throw UnsupportedError("the sampled bin-partitioned histogram of " + std::to_string(p.bins) +
                               " bins does not fit in this GPU's shared memory; use fewer bins");
    policy.strategy = name == H::automatic ? ok.front() : name;
    if (std::find(ok.begin(), ok.end(), policy.strategy) == ok.end())
        throw UnsupportedError("histogram strategy \"" + name_of(requested) + "\" cannot run " + std::to_string(p.bins) +
                               " bins on this GPU (a " + std::to_string(p.bins) + "x" + std::to_string(p.bins) +
                               " histogram does not fit in shared memory); use \"zero-slot\" or \"auto\"");
    const std::size_t bb = std::size_t(p.bins) * p.bins;
    const std::size_t limit = smem_optin(gpu);
    // Global histograms in chunks of at most 256 MiB.
    const int global_chunk =
        int(std::max<std::size_t>(1, std::min<std::size_t>(p.candidates(), (std::size_t(256) << 20) / (bb * 4))));
    const H st = policy.strategy;
    if (st == H::shared || st == H::replicated) {
        policy.threads = kSharedThreads;
        policy.row_stride = p.bins + 1;
        const std::size_t hs = padded_words(p.bins);
        policy.copies = 1;
        if (st == H::replicated) {
            // As many replicas as leave room for two blocks per SM, at most 8.
            policy.copies = 8;
            while (policy.copies > 2 && std::size_t(policy.copies) * (hs + 1) * 4 * 2 > limit) policy.copies /= 2;
        }
        policy.smem_bytes = int(std::size_t(policy.copies) * (policy.copies > 1 ? hs + 1 : hs) * 4);
    } else if (st == H::adaptive) {
        policy.threads = kAdaptiveThreads;
        // Room for four blocks per SM if the table leaves some, else two, else one.
        std::size_t budget = limit / 4;
        if ((bb + 1024) * 4 > budget) budget = limit / 2;
        if ((bb + 1024) * 4 > budget) budget = limit;
        policy.adaptive_capacity = int(budget / 4 - bb);
        policy.smem_bytes = int(budget);
        policy.candidates_per_launch = global_chunk;
    } else if (st == H::bin_partitioned) {
        policy.threads = kPartitionThreads;
        policy.smem_bytes = int(bb * 4 + kPartitionThreads * 2);
    } else if (st == H::presorted) {
        policy.threads = kCrThreads;
        // Li & Kumar found 768 pixels per block best on their GPU; on an H100
        // 2048 was fastest of 256..2048 (`bench methods`, docs/benchmarks.md).
        if (!policy.workload) policy.workload = 2048;
    } else if (st == H::cr_atomic) {
        policy.threads = kCrThreads;
        policy.smem_bytes = p.bins * (8 + 8 + 4);
    } else {
        policy.threads = kGlobalThreads;
        policy.smem_bytes = policy.threads * 4;
        policy.candidates_per_launch = global_chunk;
    }
    return policy;
}

}  // namespace stackalign::cuda
