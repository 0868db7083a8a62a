#include <algorithm>
#include <cstring>

#include "mi_search.hpp"

namespace stackalign::cpu {

void joint_histogram(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy, int sz,
                     std::uint32_t* hist) {
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

std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p) {
    const int n = p.candidates(), side_x = p.side_x(), side_y = p.side_y();
    const ShiftRange& m = p.max_shift;
    const std::vector<double> nlogn = nlogn_table(p.window_pixels());
    std::vector<double> map(n);
    #pragma omp parallel
    {
        std::vector<std::uint32_t> hist(std::size_t(p.bins) * p.bins);
        #pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < n; ++i) {
            joint_histogram(ref, mov, p, i % side_x - m.x, i / side_x % side_y - m.y, i / (side_x * side_y) - m.z,
                            hist.data());
            map[i] = score_from_histogram(hist.data(), p.bins, nlogn, p.metric);
        }
    }
    return map;
}

MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p) {
    return peak_from_map(mi_map(ref, mov, p), p.max_shift);
}

}  // namespace stackalign::cpu
