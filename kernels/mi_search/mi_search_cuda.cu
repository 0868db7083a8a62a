#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/cr_kernels.cuh"
#include "cuda/find_peak.cuh"
#include "cuda/histogram_kernels.cuh"
#include "mi_search_cuda.cuh"
#include "search_bands.hpp"
#include "../tuned_choice.cuh"

namespace stackalign::cuda {

namespace {
// c log c on each GPU, one table for every search of the process there
// (shared_nlogn_table's, uploaded once and again only when a larger window
// asks): each DeviceMiSearch made and uploaded its own, 3-4 ms of
// logarithms on the host for a 512^2 window, made by every searcher of a
// job's three searches and five times over in the strategy tuning that the
// other searchers wait for. A search keeps the table it was given, so one
// grown meanwhile frees the old only once no search reads it.
std::shared_ptr<const DeviceBuffer<double>> device_nlogn_table(std::int64_t max_count) {
    static std::mutex lock;
    // Never destroyed: searches that outlive static destruction may still hold a table.
    static auto* tables = new std::map<int, std::shared_ptr<const DeviceBuffer<double>>>;
    int gpu = 0;
    CUDA_CHECK(cudaGetDevice(&gpu));
    const std::lock_guard<std::mutex> hold(lock);
    std::shared_ptr<const DeviceBuffer<double>>& kept = (*tables)[gpu];
    if (kept && std::int64_t(kept->size()) > max_count) return kept;
    const std::shared_ptr<const std::vector<double>> host = shared_nlogn_table(max_count);
    auto table = std::make_shared<DeviceBuffer<double>>();
    table->reserve(host->size());
    CUDA_CHECK(cudaMemcpy(table->get(), host->data(), host->size() * sizeof(double), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before the copy has landed,
    // and the searches that read the table run on streams that do not wait
    // for the default one.
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
    kept = std::move(table);
    return kept;
}
}  // namespace

DeviceMiSearch::DeviceMiSearch(const MiSearchParams& p, HistogramStrategy strategy, int gpu, int presorted_workload)
    : params_(p), sized_for_(p.max_shift), policy_(choose_policy(p, strategy, gpu, presorted_workload)) {
    nlogn_ = device_nlogn_table(p.window_pixels());
    // MI of at most 32 MiB of candidates per launch (at least one window's).
    windows_per_launch_ = int(std::clamp<std::size_t>((std::size_t(32) << 20) / (8 * std::size_t(p.candidates())), 1, 65535));
    using H = HistogramStrategy;
    const H st = policy_.strategy;
    const std::size_t bb = std::size_t(p.bins) * p.bins;
    if (st == H::zero_slot || st == H::adaptive) hist_.reserve(std::size_t(policy_.candidates_per_launch) * bb);
    if (st == H::adaptive) table_.reserve(bb);
    if (st == H::presorted) {
        const std::size_t pixels = std::size_t(p.window_pixels());
        keys_.reserve(pixels);
        sorted_keys_.reserve(pixels);
        offsets_.reserve(pixels);
        sorted_offsets_.reserve(pixels);
        run_keys_.reserve(p.bins);
        for (DeviceBuffer<int>* b : {&run_lengths_, &bin_length_, &bin_begin_, &bin_end_}) b->reserve(p.bins);
        run_count_.reserve(1);
        segment_count_.reserve(p.bins + 1);
        first_segment_.reserve(p.bins + 1);
        max_segments_ = int(pixels / policy_.workload + p.bins);
        segments_.reserve(max_segments_);
        // Segment sums of at most 64 MiB of candidates per launch.
        cr_candidates_per_launch_ = int(std::clamp<std::size_t>(
            (std::size_t(64) << 20) / (sizeof(ulonglong2) * max_segments_), 1, std::min(p.candidates(), 65535)));
        segment_sums_.reserve(std::size_t(cr_candidates_per_launch_) * max_segments_);
        // One scratch buffer for the sort, the run-length encoding and both scans.
        std::size_t sort = 0, encode = 0, scan = 0;
        CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort, keys_.get(), sorted_keys_.get(), offsets_.get(),
                                                   sorted_offsets_.get(), int(pixels)));
        CUDA_CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, encode, sorted_keys_.get(), run_keys_.get(),
                                                      run_lengths_.get(), run_count_.get(), int(pixels)));
        CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan, segment_count_.get(), first_segment_.get(), p.bins + 1));
        sort_scratch_.reserve(std::max<std::size_t>({sort, encode, scan, 1}));
    }
    auto allow = [&](auto kernel) {
        if (policy_.smem_bytes > 48 * 1024)
            CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, policy_.smem_bytes));
    };
    if (st == H::shared || st == H::replicated) {
        allow(hist_shared);
        allow(hist_shared_band);
        // Made after the owner selected its GPU. Four 512-thread blocks an
        // SM, fewer where the replicas' shared memory does not fit four.
        int per_sm = 0;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hist_shared_band, policy_.threads,
                                                                 policy_.smem_bytes));
        band_slots_ = std::max(1, per_sm) * multiprocessor_count();
    }
    if (st == H::adaptive) allow(hist_adaptive);
    if (st == H::bin_partitioned) allow(hist_bin_partitioned);
}

void DeviceMiSearch::centre_on(const IntShift& c, const ShiftRange& reach, const ShiftStep& step) {
    if (reach.x > sized_for_.x || reach.y > sized_for_.y || reach.z > sized_for_.z)
        throw InternalError("DeviceMiSearch: a reach beyond the range its buffers were sized for");
    params_.centre = c;
    params_.max_shift = reach;
    params_.step = step;
}

WindowArgs DeviceMiSearch::window_args(const DeviceImage& ref, const DeviceImage& mov,
                                       const WindowCorner* corners) const {
    const MiSearchParams& p = params_;
    const SearchWindow& w = p.window;
    return {ref.data, mov.data, ref.pitch, ref.height, mov.pitch, mov.height, corners, w.width, w.height, w.depth,
            p.max_shift.x, p.max_shift.y, p.max_shift.z, p.side_x(), p.side_y(), p.centre.x, p.centre.y, p.centre.z,
            p.step, p.candidates(), p.bins, p.metric};
}

void DeviceMiSearch::adapt(const DeviceImage& ref, const DeviceImage& mov, cudaStream_t s) {
    const MiSearchParams& p = params_;
    const int bb = p.bins * p.bins;
    const int centre = (p.max_shift.z * p.side_y() + p.max_shift.y) * p.side_x() + p.max_shift.x;
    const WindowArgs a = window_args(ref, mov, corners_.get());
    CUDA_CHECK(cudaMemsetAsync(hist_.get(), 0, std::size_t(bb) * 4, s));
    hist_zero_slot<<<1, kGlobalThreads, kGlobalThreads * 4, s>>>(a, centre, hist_.get());
    CUDA_CHECK_LAUNCH("hist_zero_slot (adaptive probe)");
    std::vector<std::uint32_t> first(bb);
    CUDA_CHECK(cudaMemcpyAsync(first.data(), hist_.get(), std::size_t(bb) * 4, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    ++searches_;
    // Re-optimised when a quarter of the histogram's mass has moved.
    if (!adaptive_.level.empty() && histogram_drift(adaptive_, first.data(), p.bins) < 0.25) return;
    adaptive_ = optimise_adaptive(first.data(), p.bins, policy_.adaptive_capacity);
    ++optimisations_;
    std::vector<std::uint32_t> table(bb, ~0u);
    for (int b = 0; b < bb; ++b)
        if (adaptive_.level[b]) table[b] = std::uint32_t(adaptive_.offset[b]) << 5 | std::uint32_t(adaptive_.replicas(b) - 1);
    CUDA_CHECK(cudaMemcpyAsync(table_.get(), table.data(), std::size_t(bb) * 4, cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaStreamSynchronize(s));  // `table` is freed on return
}

std::string DeviceMiSearch::adaptive_summary() const {
    if (adaptive_.level.empty()) return {};
    int cached = 0, replicated = 0;
    for (std::size_t b = 0; b < adaptive_.level.size(); ++b) {
        cached += adaptive_.level[b] > 0;
        replicated += adaptive_.level[b] > 1;
    }
    std::ostringstream o;
    o << "adaptive: " << cached << " bins cached (" << replicated << " replicated) in " << adaptive_.slots
      << " shared slots; expected cost " << adaptive_.expected_cost << " vs " << adaptive_.global_cost
      << " all-global per warp step; configured " << optimisations_ << " time(s) in " << searches_ << " search(es)";
    return o.str();
}

void DeviceMiSearch::presorted_cr(const WindowArgs& a, int win, std::size_t offset, cudaStream_t s, BinMoments* dump) {
    const MiSearchParams& p = params_;
    const int pixels = int(p.window_pixels()), n = p.candidates();
    // Once per window: sort its pixels by reference bin and cut the runs into segments.
    cr_sort_input<<<(pixels + 255) / 256, 256, 0, s>>>(a, win, keys_.get(), offsets_.get());
    CUDA_CHECK_LAUNCH("cr_sort_input");
    std::size_t scratch = sort_scratch_.size();
    const int bits = std::max(1, int(std::ceil(std::log2(double(p.bins)))));
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_scratch_.get(), scratch, keys_.get(), sorted_keys_.get(),
                                               offsets_.get(), sorted_offsets_.get(), pixels, 0, bits, s));
    // Each bin's run [begin, end) and its segments of at most `workload` pixels.
    const int blocks = (p.bins + 1 + 255) / 256;
    std::size_t scratch_size = sort_scratch_.size();
    CUDA_CHECK(cub::DeviceRunLengthEncode::Encode(sort_scratch_.get(), scratch_size, sorted_keys_.get(), run_keys_.get(),
                                                  run_lengths_.get(), run_count_.get(), pixels, s));
    CUDA_CHECK(cudaMemsetAsync(bin_length_.get(), 0, std::size_t(p.bins) * sizeof(int), s));
    cr_scatter_runs<<<blocks, 256, 0, s>>>(run_keys_.get(), run_lengths_.get(), run_count_.get(), bin_length_.get());
    CUDA_CHECK_LAUNCH("cr_scatter_runs");
    scratch_size = sort_scratch_.size();
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(sort_scratch_.get(), scratch_size, bin_length_.get(), bin_begin_.get(), p.bins, s));
    cr_segment_counts<<<blocks, 256, 0, s>>>(bin_length_.get(), p.bins, policy_.workload, segment_count_.get());
    CUDA_CHECK_LAUNCH("cr_segment_counts");
    scratch_size = sort_scratch_.size();
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(sort_scratch_.get(), scratch_size, segment_count_.get(), first_segment_.get(),
                                             p.bins + 1, s));
    cr_write_segments<<<blocks, 256, 0, s>>>(bin_begin_.get(), bin_length_.get(), p.bins, policy_.workload,
                                             first_segment_.get(), segments_.get(), bin_end_.get());
    CUDA_CHECK_LAUNCH("cr_write_segments");
    const int* begin = bin_begin_.get();
    const int* end = bin_end_.get();
    // Every candidate reuses the sort.
    for (int first = 0; first < n; first += cr_candidates_per_launch_) {
        const int count = std::min(cr_candidates_per_launch_, n - first);
        cr_segment_sums<<<dim3(max_segments_, count), policy_.threads, 0, s>>>(
            a, win, first, sorted_offsets_.get(), segments_.get(), first_segment_.get(), max_segments_,
            segment_sums_.get());
        CUDA_CHECK_LAUNCH("cr_segment_sums");
        cr_finish<<<(count + 127) / 128, 128, 0, s>>>(segment_sums_.get(), max_segments_, count, begin, end,
                                                       first_segment_.get(), p.bins, mi_.get() + offset + first,
                                                       dump ? dump + std::size_t(first) * p.bins : nullptr);
        CUDA_CHECK_LAUNCH("cr_finish");
    }
}

MiPeak DeviceMiSearch::search(const DeviceImage& ref, const DeviceImage& mov, cudaStream_t s,
                              std::vector<double>* map, std::vector<std::uint32_t>* histograms,
                              std::vector<BinMoments>* moments) {
    const SearchWindow& w = params_.window;
    return search(ref, mov, {WindowCorner{w.x, w.y, w.z}}, s, map, histograms, moments).front();
}

std::vector<MiPeak> DeviceMiSearch::search(const DeviceImage& ref, const DeviceImage& mov,
                                           const std::vector<WindowCorner>& corners, cudaStream_t s,
                                           std::vector<double>* map, std::vector<std::uint32_t>* histograms,
                                           std::vector<BinMoments>* moments) {
    const MiSearchParams& p = params_;
    using H = HistogramStrategy;
    const H st = policy_.strategy;
    const bool cr_only = computes_cr_only(st);
    const bool global_histograms = st == H::zero_slot || st == H::adaptive;
    if (cr_only && histograms) throw InternalError("the " + name_of(st) + " strategy makes no joint histograms");
    if (!cr_only && moments) throw InternalError("only the CR strategies keep per-bin moments");
    const int n = p.candidates();
    const int total = int(corners.size());
    const std::size_t bb = std::size_t(p.bins) * p.bins;
    const double pixels = double(p.window_pixels());
    if (map) map->resize(std::size_t(total) * n);
    if (histograms) histograms->assign(std::size_t(total) * n * bb, 0);
    DeviceBuffer<std::uint32_t> dump;
    if (histograms && !global_histograms) dump.reserve(std::size_t(total) * n * bb);
    DeviceBuffer<BinMoments> moment_dump;
    if (moments) moment_dump.reserve(std::size_t(total) * n * p.bins);

    corners_.reserve(corners.size());
    CUDA_CHECK(cudaMemcpyAsync(corners_.get(), corners.data(), corners.size() * sizeof(WindowCorner),
                               cudaMemcpyHostToDevice, s));
    const int per_launch = std::min(windows_per_launch_, total);
    mi_.reserve(std::size_t(per_launch) * n);
    peaks_.reserve(std::size_t(per_launch) * sizeof(DevicePeak));
    std::vector<DevicePeak> found(total);
    if (st == H::adaptive) adapt(ref, mov, s);

    for (int first_window = 0; first_window < total; first_window += per_launch) {
        const int windows = std::min(per_launch, total - first_window);
        const WindowArgs a = window_args(ref, mov, corners_.get() + first_window);
        const std::size_t first_candidate = std::size_t(first_window) * n;  // of the whole call
        std::uint32_t* hist_dump = histograms && !global_histograms ? dump.get() + first_candidate * bb : nullptr;
        BinMoments* moment_out = moments ? moment_dump.get() + first_candidate * p.bins : nullptr;
        if (global_histograms) {
            const int count_all = windows * n;
            for (int first = 0; first < count_all; first += policy_.candidates_per_launch) {
                const int count = std::min(policy_.candidates_per_launch, count_all - first);
                if (st == H::zero_slot) {
                    CUDA_CHECK(cudaMemsetAsync(hist_.get(), 0, std::size_t(count) * bb * 4, s));
                    hist_zero_slot<<<count, policy_.threads, policy_.smem_bytes, s>>>(a, first, hist_.get());
                    CUDA_CHECK_LAUNCH("hist_zero_slot");
                } else {
                    const int smem = int((bb + adaptive_.slots) * 4);
                    hist_adaptive<<<count, policy_.threads, smem, s>>>(a, first, table_.get(), adaptive_.slots, pixels,
                                                                        hist_.get());
                    CUDA_CHECK_LAUNCH("hist_adaptive");
                }
                if (histograms)
                    CUDA_CHECK(cudaMemcpyAsync(histograms->data() + (first_candidate + first) * bb, hist_.get(),
                                               std::size_t(count) * bb * 4, cudaMemcpyDeviceToHost, s));
                mi_from_global<<<count, kGlobalThreads, 0, s>>>(hist_.get(), p.bins, first, nlogn_->get(), pixels, p.metric, mi_.get());
                CUDA_CHECK_LAUNCH("mi_from_global");
            }
        } else if (st == H::bin_partitioned) {
            hist_bin_partitioned<<<dim3(n, windows), policy_.threads, policy_.smem_bytes, s>>>(
                a, p.sample_stride, nlogn_->get(), mi_.get(), hist_dump);
            CUDA_CHECK_LAUNCH("hist_bin_partitioned");
        } else if (st == H::cr_atomic) {
            cr_atomic<<<dim3(n, windows), policy_.threads, policy_.smem_bytes, s>>>(a, pixels, mi_.get(), moment_out);
            CUDA_CHECK_LAUNCH("cr_atomic");
        } else if (st == H::presorted) {
            for (int win = 0; win < windows; ++win)
                presorted_cr(a, win, std::size_t(win) * n, s, moment_out ? moment_out + std::size_t(win) * n * p.bins : nullptr);
        } else if (const int bands = search_bands(windows * n, (long long)p.window.height * p.window.depth, pixels, band_slots_);
                   bands > 1) {
            const std::size_t all = std::size_t(windows) * n * bb;
            hist_.reserve(all);
            CUDA_CHECK(cudaMemsetAsync(hist_.get(), 0, all * 4, s));
            hist_shared_band<<<dim3(n, windows, bands), policy_.threads, policy_.smem_bytes, s>>>(
                a, policy_.copies, policy_.row_stride, hist_.get());
            CUDA_CHECK_LAUNCH("hist_shared_band");
            mi_from_bands<<<windows * n, policy_.threads, 0, s>>>(hist_.get(), p.bins, nlogn_->get(), pixels, p.metric,
                                                                 mi_.get());
            CUDA_CHECK_LAUNCH("mi_from_bands");
            if (hist_dump) CUDA_CHECK(cudaMemcpyAsync(hist_dump, hist_.get(), all * 4, cudaMemcpyDeviceToDevice, s));
        } else {
            hist_shared<<<dim3(n, windows), policy_.threads, policy_.smem_bytes, s>>>(
                a, policy_.copies, policy_.row_stride, nlogn_->get(), pixels, mi_.get(), hist_dump);
            CUDA_CHECK_LAUNCH("hist_shared");
        }
        DevicePeak* d_peaks = reinterpret_cast<DevicePeak*>(peaks_.get());
        find_peak<<<windows, kPeakThreads, 0, s>>>(mi_.get(), n, p.side_x(), p.side_y(), p.side_z(), p.max_shift, p.step, d_peaks);
        CUDA_CHECK_LAUNCH("find_peak");
        CUDA_CHECK(cudaMemcpyAsync(found.data() + first_window, d_peaks, windows * sizeof(DevicePeak),
                                   cudaMemcpyDeviceToHost, s));
        if (map)
            CUDA_CHECK(cudaMemcpyAsync(map->data() + first_candidate, mi_.get(), std::size_t(windows) * n * sizeof(double),
                                       cudaMemcpyDeviceToHost, s));
    }
    if (histograms && !global_histograms)
        CUDA_CHECK(cudaMemcpyAsync(histograms->data(), dump.get(), histograms->size() * 4, cudaMemcpyDeviceToHost, s));
    if (moments) {
        moments->resize(std::size_t(total) * n * p.bins);
        CUDA_CHECK(cudaMemcpyAsync(moments->data(), moment_dump.get(), moments->size() * sizeof(BinMoments),
                                   cudaMemcpyDeviceToHost, s));
    }
    CUDA_CHECK(cudaStreamSynchronize(s));  // `found` and the copies are complete; `dump` may be freed

    std::vector<MiPeak> peaks(total);
    const ShiftRange& m = p.max_shift;
    for (int i = 0; i < total; ++i) {
        const DevicePeak& d = found[i];
        MiPeak& peak = peaks[i];
        peak.dx = p.step.x * (d.best % p.side_x() - m.x);
        peak.dy = p.step.y * (d.best / p.side_x() % p.side_y() - m.y);
        peak.dz = p.step.z * (d.best / (p.side_x() * p.side_y()) - m.z);
        peak.centre = p.centre;
        std::memcpy(peak.around, d.around, sizeof peak.around);
        std::memcpy(peak.around_z, d.around_z, sizeof peak.around_z);
        peak.mi = peak.around[1][1];
        peak.mean = d.mean;
        peak.stddev = d.stddev;
    }
    return peaks;
}

// Milliseconds of one search, timed with events on the search's stream.
double timed_search_ms(DeviceMiSearch& search, const DeviceImage& ref, const DeviceImage& mov, const WindowCorner& at,
                       cudaStream_t s) {
    return timed_ms(s, [&] { search.search(ref, mov, {at}, s); });
}


// ---- the GPU twins of mi_search.hpp's host entry points ---------------------

namespace {

// The sampled strategy searches the sample whatever the parameters say;
// the others search what the parameters say (tests set sample_stride).
MiSearchParams sampled_as_requested(const MiSearchParams& p, HistogramStrategy s) {
    return s == HistogramStrategy::bin_partitioned_sampled ? sampled_as(p, s) : p;
}

void upload(DeviceBuffer<std::uint8_t>& d, const BinImage& im, cudaStream_t s) {
    d.reserve(im.size());
    CUDA_CHECK(cudaMemcpyAsync(d.get(), im.pixels.data(), im.size(), cudaMemcpyHostToDevice, s));
}

void require_same_size(const BinImage& a, const BinImage& b, const MiSearchParams& p) {
    if (a.width != b.width || a.height != b.height || a.depth != b.depth)
        throw InternalError("reference and moving images differ in size");
    check_window_fits(p, a.width, a.height, a.depth);
}

// One pair on the device, for the test/bench entry points below.
struct PreparedSearch {
    Stream s;
    DeviceBuffer<std::uint8_t> ref, mov;
    DeviceImage ref_image, mov_image;
    DeviceMiSearch search;
    PreparedSearch(const BinImage& r, const BinImage& m, const MiSearchParams& p, HistogramStrategy strategy, int gpu,
                   int presorted_workload = 0)
        : ref_image((select_device(gpu), require_same_size(r, m, p), DeviceImage{nullptr, r.width, r.height})),
          mov_image{nullptr, m.width, m.height},
          search(sampled_as_requested(p, strategy), strategy, gpu, presorted_workload) {
        upload(ref, r, s);
        upload(mov, m, s);
        ref_image.data = ref.get();
        mov_image.data = mov.get();
    }
    MiPeak run(std::vector<double>* map = nullptr, std::vector<std::uint32_t>* histograms = nullptr,
               std::vector<BinMoments>* moments = nullptr) {
        return search.search(ref_image, mov_image, s, map, histograms, moments);
    }
};
}  // namespace

std::vector<std::uint32_t> joint_histograms(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                            HistogramStrategy strategy, int gpu) {
    std::vector<std::uint32_t> h;
    PreparedSearch(ref, mov, p, strategy, gpu).run(nullptr, &h);
    return h;
}

std::vector<BinMoments> cr_moments(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                   HistogramStrategy strategy, int gpu) {
    std::vector<BinMoments> m;
    PreparedSearch(ref, mov, p, strategy, gpu).run(nullptr, nullptr, &m);
    return m;
}

std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                           HistogramStrategy strategy, int gpu, int presorted_workload) {
    std::vector<double> map;
    PreparedSearch(ref, mov, p, strategy, gpu, presorted_workload).run(&map);
    return map;
}

MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, HistogramStrategy strategy,
                 int gpu) {
    return PreparedSearch(ref, mov, p, strategy, gpu).run();
}

std::vector<MiPeak> mi_search_windows(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                      const std::vector<WindowCorner>& corners, HistogramStrategy strategy,
                                      int windows_per_launch, int gpu) {
    PreparedSearch ps(ref, mov, p, strategy, gpu);
    if (windows_per_launch > 0) ps.search.limit_windows_per_launch(windows_per_launch);
    return ps.search.search(ps.ref_image, ps.mov_image, corners, ps.s);
}

std::vector<HistogramStrategy> strategies(const MiSearchParams& p, int gpu) {
    select_device(gpu);
    return available_strategies(p, gpu);
}

std::string describe_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                            HistogramStrategy strategy, int gpu) {
    PreparedSearch ps(ref, mov, p, strategy, gpu);
    ps.run();
    const std::string a = ps.search.adaptive_summary();
    return ps.search.policy().describe() + (a.empty() ? "" : "; " + a);
}

double time_search_ms(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, HistogramStrategy strategy,
                      int repeats, int gpu, int presorted_workload) {
    PreparedSearch ps(ref, mov, p, strategy, gpu, presorted_workload);
    ps.run();  // warm-up: module load, first-touch
    std::vector<double> ms(std::max(1, repeats));
    const SearchWindow& w = p.window;
    for (double& t : ms) t = timed_search_ms(ps.search, ps.ref_image, ps.mov_image, {w.x, w.y, w.z}, ps.s);
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2];
}

}  // namespace stackalign::cuda
