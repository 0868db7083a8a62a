#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "mi_search.hpp"

namespace stackalign::cpu {

namespace {
// c log c up to at least `max_count`, one table for every search of the
// process (an entry does not depend on the size asked for): a window's
// worth of logarithms per pair was a few per cent of a small search.
std::shared_ptr<const std::vector<double>> shared_nlogn_table(std::int64_t max_count) {
    static std::mutex lock;
    static std::shared_ptr<const std::vector<double>> table;
    const std::lock_guard<std::mutex> hold(lock);
    if (!table || std::int64_t(table->size()) <= max_count)
        table = std::make_shared<const std::vector<double>>(nlogn_table(max_count));
    return table;
}

// The bin-partitioned sample (mi_search.hpp): pixel i of the window (rows of
// all slices in order) counts when its joint bin's owner thread looks at it.
void sampled_joint_histogram(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy,
                             int sz, std::uint32_t* hist) {
    const int bins = p.bins, bb = bins * bins, stride = p.sample_stride;
    const SearchWindow& w = p.window;
    std::memset(hist, 0, sizeof(std::uint32_t) * bb);
    std::int64_t i = 0;
    for (int row = 0; row < w.height * w.depth; ++row) {
        const int y = row % w.height, z = row / w.height;
        const std::uint8_t* a = &ref.at(w.x, w.y + y, w.z + z);
        const std::uint8_t* b = &mov.at(w.x + sx, w.y + y + sy, w.z + z + sz);
        for (int x = 0; x < w.width; ++x, ++i) {
            const int bin = a[x] * bins + b[x];
            if (partition_owner(bin, bb, kPartitionThreads) % stride == i % stride) ++hist[bin];
        }
    }
}
}  // namespace

namespace {
// The joint histograms of K candidates side by side along x, (sx, sy, sz),
// (sx + dx, sy, sz), ... (sx + (K - 1) dx, sy, sz), in one pass over the
// window: each reference pixel is read once for all of them, and their
// counters' increments are independent. Two at a time, a search took 57-65
// ms against 70-76 one at a time on the drift stack, 126-128 against
// 169-196 on the tilt series (2 cores, docs/benchmarks.md).
template <int K>
void joint_histograms_along_x(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy,
                              int sz, std::uint32_t* const* hist, int dx = 1) {
    const int bins = p.bins;
    const SearchWindow& w = p.window;
    std::uint64_t others[K] = {};
    for (int k = 0; k < K; ++k) std::memset(hist[k], 0, sizeof(std::uint32_t) * bins * bins);
    for (int row = 0; row < w.height * w.depth; ++row) {
        const int y = row % w.height, z = row / w.height;
        const std::uint8_t* a = &ref.at(w.x, w.y + y, w.z + z);
        const std::uint8_t* b = &mov.at(w.x + sx, w.y + y + sy, w.z + z + sz);
        for (int x = 0; x < w.width; ++x) {
            const unsigned av = a[x];
            for (int k = 0; k < K; ++k) {
                // (0,0) pairs dominate thresholded edge maps; skipping them avoids a
                // long chain of increments to one counter, and their count is
                // whatever the other bins leave of the window.
                const unsigned bv = b[x + k * dx];
                if ((av | bv) != 0) {
                    ++hist[k][av * bins + bv];
                    ++others[k];
                }
            }
        }
    }
    for (int k = 0; k < K; ++k) hist[k][0] = std::uint32_t(std::uint64_t(p.window_pixels()) - others[k]);
}
}  // namespace

void joint_histogram(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy, int sz,
                     std::uint32_t* hist) {
    if (p.sample_stride > 1) return sampled_joint_histogram(ref, mov, p, sx, sy, sz, hist);
    joint_histograms_along_x<1>(ref, mov, p, sx, sy, sz, &hist);
}

void cr_moments(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy, int sz,
                BinMoments* out) {
    const SearchWindow& w = p.window;
    std::fill(out, out + p.bins, BinMoments{});
    for (int row = 0; row < w.height * w.depth; ++row) {
        const int y = row % w.height, z = row / w.height;
        const std::uint8_t* a = &ref.at(w.x, w.y + y, w.z + z);
        const std::uint8_t* b = &mov.at(w.x + sx, w.y + y + sy, w.z + z + sz);
        for (int x = 0; x < w.width; ++x) {
            const unsigned long long v = b[x];
            BinMoments& m = out[a[x]];
            ++m.n;
            m.s += v;
            m.q += v * v;
        }
    }
}

std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p) {
    const int n = p.candidates(), side_x = p.side_x(), side_y = p.side_y(), side_z = p.side_z();
    const ShiftRange& m = p.max_shift;
    const IntShift& c = p.centre;
    const ShiftStep& st = p.step;
    const std::shared_ptr<const std::vector<double>> table = shared_nlogn_table(p.window_pixels());
    const std::vector<double>& nlogn = *table;
    std::vector<double> map(n);
    // Neighbouring candidates along x two at a time (joint_histograms_along_x:
    // st.x pixels apart, so the sharpness lattice's too).
    const int twos = (side_x + 1) / 2, tasks = twos * side_y * side_z;
    const bool paired = p.sample_stride == 1;
    #pragma omp parallel
    {
        std::vector<std::uint32_t> hist(std::size_t(2) * p.bins * p.bins);
        std::uint32_t* const both[2] = {hist.data(), hist.data() + std::size_t(p.bins) * p.bins};
        #pragma omp for schedule(dynamic, 1)
        for (int t = 0; t < (paired ? tasks : n); ++t) {
            const int i = paired ? (t / twos) * side_x + 2 * (t % twos) : t;
            const int sx = c.x + st.x * (i % side_x - m.x), sy = c.y + st.y * (i / side_x % side_y - m.y),
                      sz = c.z + st.z * (i / (side_x * side_y) - m.z);
            if (paired && i % side_x + 1 < side_x) {
                joint_histograms_along_x<2>(ref, mov, p, sx, sy, sz, both, st.x);
                map[i + 1] = score_from_histogram(both[1], p.bins, nlogn, p.metric);
            } else {
                joint_histogram(ref, mov, p, sx, sy, sz, hist.data());
            }
            map[i] = score_from_histogram(hist.data(), p.bins, nlogn, p.metric);
        }
    }
    return map;
}

MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p) {
    MiPeak peak = peak_from_map(mi_map(ref, mov, p), p.max_shift, p.step);
    peak.centre = p.centre;
    return peak;
}

}  // namespace stackalign::cpu
