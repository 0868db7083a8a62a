// GPU twin of mi_search_cpu.cpp. Layers as in CUB's histogram: a printable
// policy chosen by one function, a host driver that sizes and launches, thin
// kernels, per-block device logic.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../cuda_common.cuh"
#include "mi_search.hpp"

namespace stackalign::cuda {

struct HistogramPolicy {
    std::string strategy;          // "zero-slot" | "shared" | "replicated"
    int threads = 256;             // per block; one block per candidate window
    int smem_bytes = 0;            // dynamic shared memory per block
    int copies = 1;                // histogram replicas per block (replicated)
    int candidates_per_launch = 0; // zero-slot: global histograms are made in chunks of this many
    int row_stride = 0;            // shared/replicated: words per histogram row (padded)
    std::string describe() const;
};

// Strategies that fit this problem on this device, in the order bench/ ranked
// them on an H100 (docs/benchmarks.md).
std::vector<std::string> available_strategies(const MiSearchParams& p, int gpu);
// `requested` is a strategy name, or "auto": the first available one here;
// the pipeline's searcher instead times them all on the first pair.
HistogramPolicy choose_policy(const MiSearchParams& p, const std::string& requested, int gpu);

// A bin image (or volume) on the device: rows of `pitch` bytes, `height` rows per slice.
struct DeviceImage {
    const std::uint8_t* data;
    int pitch, height;
};

class DeviceMiSearch {
public:
    DeviceMiSearch(const MiSearchParams& p, const std::string& strategy, int gpu);
    // The window of the parameters lies in `ref`; moved by each shift, in `mov`
    // (their sizes may differ). Optionally returns the MI of every candidate
    // and (small problems, for tests) every histogram.
    MiPeak search(const DeviceImage& ref, const DeviceImage& mov, cudaStream_t stream,
                  std::vector<double>* map = nullptr, std::vector<std::uint32_t>* histograms = nullptr);
    // The same window size and shift range at each corner (landmarks: one
    // per point), all in as few launches as memory allows; map and
    // histograms are window-major.
    std::vector<MiPeak> search(const DeviceImage& ref, const DeviceImage& mov, const std::vector<WindowCorner>& corners,
                               cudaStream_t stream, std::vector<double>* map = nullptr,
                               std::vector<std::uint32_t>* histograms = nullptr);
    // Fewer windows per launch than memory allows (tests of the chunking).
    void limit_windows_per_launch(int windows) { windows_per_launch_ = std::max(1, std::min(windows_per_launch_, windows)); }
    const HistogramPolicy& policy() const { return policy_; }

private:
    MiSearchParams params_;
    HistogramPolicy policy_;
    DeviceBuffer<double> nlogn_, mi_;
    DeviceBuffer<std::uint32_t> hist_;
    DeviceBuffer<WindowCorner> corners_;
    DeviceBuffer<unsigned char> peaks_;  // DevicePeak, a type of the .cu file
    int windows_per_launch_ = 1;
};

}  // namespace stackalign::cuda
