// GPU twin of mi_search_cpu.cpp. Layers as in CUB's histogram: a printable
// policy chosen by one function, a host driver that sizes and launches, thin
// kernels, per-block device logic.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../cuda_common.cuh"
#include "adaptive_histogram.hpp"
#include "mi_search.hpp"

namespace stackalign::cuda {

struct HistogramPolicy {
    // Joint histograms: "zero-slot" | "shared" | "replicated" | "adaptive" |
    // "bin-partitioned" (sampled when the parameters' sample_stride > 1).
    // Correlation ratio only: "presorted" (Li & Kumar; "presorted:W" sets the
    // workload, for bench/) | "cr-atomic".
    std::string strategy;
    int threads = 256;             // per block; one block per candidate window
    int smem_bytes = 0;            // dynamic shared memory per block
    int copies = 1;                // histogram replicas per block (replicated)
    int candidates_per_launch = 0; // zero-slot: global histograms are made in chunks of this many
    int row_stride = 0;            // shared/replicated: words per histogram row (padded)
    int adaptive_capacity = 0;     // adaptive: shared slots a block may give to cached bins
    int workload = 0;              // presorted: most pixels per block (one bin's run segment)
    std::string describe() const;
};

// Exact strategies that fit this problem on this device, in the order bench/
// ranked them on an H100 (docs/benchmarks.md); with sample_stride > 1 only
// the sampled bin-partitioned one.
std::vector<std::string> available_strategies(const MiSearchParams& p, int gpu);
// Those "auto" times on the first pair: all but bin-partitioned, which scans
// every pixel once per thread and is there to be compared, not chosen.
std::vector<std::string> auto_strategies(const MiSearchParams& p, int gpu);
// `requested` is a strategy name, or "auto": the first available one here;
// the pipeline's searcher instead times them all on the first pair.
HistogramPolicy choose_policy(const MiSearchParams& p, const std::string& requested, int gpu);

// A bin image (or volume) on the device: rows of `pitch` bytes, `height` rows per slice.
struct DeviceImage {
    const std::uint8_t* data;
    int pitch, height;
};

// What every search kernel is given: both images, the windows and the range.
struct WindowArgs {
    const std::uint8_t* ref;
    const std::uint8_t* mov;
    int ref_pitch, ref_height;          // row length and rows per slice of each image
    int mov_pitch, mov_height;
    const WindowCorner* corners;        // one per searched window (landmarks: per point)
    int ww, wh, wd;                     // window size
    int mx, my, mz, side_x, side_y;     // shift half-ranges; candidates per row and per plane
    int candidates, bins;               // candidates per window
    Metric metric;
};

class DeviceMiSearch {
public:
    DeviceMiSearch(const MiSearchParams& p, const std::string& strategy, int gpu);
    // The window of the parameters lies in `ref`; moved by each shift, in `mov`
    // (their sizes may differ). Optionally returns the MI of every candidate
    // and (small problems, for tests) every histogram, or for the CR
    // strategies every candidate's per-bin moments.
    MiPeak search(const DeviceImage& ref, const DeviceImage& mov, cudaStream_t stream,
                  std::vector<double>* map = nullptr, std::vector<std::uint32_t>* histograms = nullptr,
                  std::vector<BinMoments>* moments = nullptr);
    // The same window size and shift range at each corner (landmarks: one
    // per point), all in as few launches as memory allows; map and
    // histograms are window-major.
    std::vector<MiPeak> search(const DeviceImage& ref, const DeviceImage& mov, const std::vector<WindowCorner>& corners,
                               cudaStream_t stream, std::vector<double>* map = nullptr,
                               std::vector<std::uint32_t>* histograms = nullptr,
                               std::vector<BinMoments>* moments = nullptr);
    // Fewer windows per launch than memory allows (tests of the chunking).
    void limit_windows_per_launch(int windows) { windows_per_launch_ = std::max(1, std::min(windows_per_launch_, windows)); }
    const HistogramPolicy& policy() const { return policy_; }
    // Adaptive: what the current configuration is, and how often it was made.
    std::string adaptive_summary() const;

private:
    // The kernels' arguments for windows starting at `corners` (device).
    WindowArgs window_args(const DeviceImage& ref, const DeviceImage& mov, const WindowCorner* corners) const;
    // Adaptive: the unoptimised histogram of the first window at shift 0;
    // (re)optimises when there is no configuration yet or it has drifted.
    void adapt(const DeviceImage& ref, const DeviceImage& mov, cudaStream_t s);
    // Presorted CR of one window, scores to mi_ + offset.
    void presorted_cr(const WindowArgs& a, int win, std::size_t offset, cudaStream_t s, BinMoments* dump);

    MiSearchParams params_;
    HistogramPolicy policy_;
    DeviceBuffer<double> nlogn_, mi_;
    DeviceBuffer<std::uint32_t> hist_;
    DeviceBuffer<WindowCorner> corners_;
    DeviceBuffer<unsigned char> peaks_;  // DevicePeak, a type of the .cu file
    int windows_per_launch_ = 1;
    // adaptive
    AdaptiveConfig adaptive_;
    DeviceBuffer<std::uint32_t> table_;
    int optimisations_ = 0, searches_ = 0;
    // presorted CR: sort input and output, bin runs, segments, their sums, CUB scratch
    DeviceBuffer<std::uint8_t> keys_, sorted_keys_;
    DeviceBuffer<int> offsets_, sorted_offsets_, runs_, first_segment_;
    DeviceBuffer<int2> segments_;
    DeviceBuffer<ulonglong2> segment_sums_;
    DeviceBuffer<unsigned char> sort_scratch_;
    int max_segments_ = 0, cr_candidates_per_launch_ = 0;
};

}  // namespace stackalign::cuda
