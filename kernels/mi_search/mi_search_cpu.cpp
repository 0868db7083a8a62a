#include <algorithm>
#include <cstring>

#include "mi_search.hpp"

namespace stackalign::cpu {

namespace {
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

void joint_histogram(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy, int sz,
                     std::uint32_t* hist) {
    if (p.sample_stride > 1) return sampled_joint_histogram(ref, mov, p, sx, sy, sz, hist);
    const int bins = p.bins;
    const SearchWindow& w = p.window;
    std::memset(hist, 0, sizeof(std::uint32_t) * bins * bins);
    std::uint64_t others = 0;
    for (int row = 0; row < w.height * w.depth; ++row) {
        const int y = row % w.height, z = row / w.height;
        const std::uint8_t* a = &ref.at(w.x, w.y + y, w.z + z);
        const std::uint8_t* b = &mov.at(w.x + sx, w.y + y + sy, w.z + z + sz);
        for (int x = 0; x < w.width; ++x) {
            // (0,0) pairs dominate thresholded edge maps; skipping them avoids a
            // long chain of increments to one counter, and their count is
            // whatever the other bins leave of the window.
            if ((a[x] | b[x]) != 0) {
                ++hist[a[x] * bins + b[x]];
                ++others;
            }
        }
    }
    hist[0] = std::uint32_t(std::uint64_t(p.window_pixels()) - others);
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
    const int n = p.candidates(), side_x = p.side_x(), side_y = p.side_y();
    const ShiftRange& m = p.max_shift;
    const IntShift& c = p.centre;
    const std::vector<double> nlogn = nlogn_table(p.window_pixels());
    std::vector<double> map(n);
    #pragma omp parallel
    {
        std::vector<std::uint32_t> hist(std::size_t(p.bins) * p.bins);
        #pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < n; ++i) {
            joint_histogram(ref, mov, p, c.x + i % side_x - m.x, c.y + i / side_x % side_y - m.y,
                            c.z + i / (side_x * side_y) - m.z, hist.data());
            map[i] = score_from_histogram(hist.data(), p.bins, nlogn, p.metric);
        }
    }
    return map;
}

MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p) {
    MiPeak peak = peak_from_map(mi_map(ref, mov, p), p.max_shift);
    peak.centre = p.centre;
    return peak;
}

}  // namespace stackalign::cpu
