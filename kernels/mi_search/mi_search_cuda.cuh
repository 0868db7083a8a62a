// The host driver of the GPU MI search (CUB's histogram layering: a policy
// chosen by one function, this driver sizing and launching, thin kernels in
// cuda/, per-block logic in cuda/block_logic.cuh).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "../cuda_common.cuh"
#include "adaptive_histogram.hpp"
#include "cuda/window_args.cuh"
#include "mi_search.hpp"
#include "mi_search_policy.cuh"

namespace stackalign::cuda {

class DeviceMiSearch {
public:
    // `strategy` as in choose_policy; p.sample_stride > 1 for the sampled histogram.
    DeviceMiSearch(const MiSearchParams& p, HistogramStrategy strategy, int gpu, int presorted_workload = 0);
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
    // Where the next searches' range is centred (MiSearchParams::centre),
    // how many candidates it has either side (at most the range the buffers
    // were sized for) and how far apart they are.
    void centre_on(const IntShift& c, const ShiftRange& reach, const ShiftStep& step = {});
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
    ShiftRange sized_for_;  // the constructor's max_shift
    HistogramPolicy policy_;
    std::shared_ptr<const DeviceBuffer<double>> nlogn_;  // c log c, shared by the GPU's searches
    DeviceBuffer<double> mi_;
    DeviceBuffer<std::uint32_t> hist_;
    DeviceBuffer<WindowCorner> corners_;
    DeviceBuffer<unsigned char> peaks_;  // DevicePeak, a type of the .cu file
    int windows_per_launch_ = 1;
    int band_slots_ = 1;  // hist_shared_band blocks the GPU holds at once (shared and replicated)
    // adaptive
    AdaptiveConfig adaptive_;
    DeviceBuffer<std::uint32_t> table_;
    int optimisations_ = 0, searches_ = 0;
    // presorted CR: sort input and output, bin runs (CUB's run-length encoding
    // scattered by bin, then scanned), segments, their sums, CUB scratch
    DeviceBuffer<std::uint8_t> keys_, sorted_keys_, run_keys_;
    DeviceBuffer<int> offsets_, sorted_offsets_, run_lengths_, run_count_, bin_length_, bin_begin_, bin_end_;
    DeviceBuffer<int> segment_count_, first_segment_;
    DeviceBuffer<int2> segments_;
    DeviceBuffer<ulonglong2> segment_sums_;
    DeviceBuffer<unsigned char> sort_scratch_;
    int max_segments_ = 0, cr_candidates_per_launch_ = 0;
};

// Milliseconds of one search at `at`, timed with events on the stream.
double timed_search_ms(DeviceMiSearch& search, const DeviceImage& ref, const DeviceImage& mov, const WindowCorner& at,
                       cudaStream_t s);

}  // namespace stackalign::cuda
