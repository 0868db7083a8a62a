#include <algorithm>
#include <cstring>

#include "mi_search.hpp"

namespace stackalign::cpu {

void joint_histogram(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy,
                     std::uint32_t* hist) {
    const int bins = p.bins;
    const SearchWindow& w = p.window;
    std::memset(hist, 0, sizeof(std::uint32_t) * bins * bins);
    std::uint64_t others = 0;
    for (int y = 0; y < w.height; ++y) {
        const std::uint8_t* a = &ref.pixels[std::size_t(w.y + y) * ref.width + w.x];
        const std::uint8_t* b = &mov.pixels[std::size_t(w.y + y + sy) * mov.width + w.x + sx];
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
    const int side = p.side(), m = p.max_shift, n = p.candidates();
    const std::vector<double> nlogn = nlogn_table(p.window_pixels());
    std::vector<double> map(n);
    #pragma omp parallel
    {
        std::vector<std::uint32_t> hist(std::size_t(p.bins) * p.bins);
        #pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < n; ++i) {
            joint_histogram(ref, mov, p, i % side - m, i / side - m, hist.data());
            map[i] = mi_from_histogram(hist.data(), p.bins, nlogn);
        }
    }
    return map;
}

MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p) {
    return peak_from_map(mi_map(ref, mov, p), p.max_shift);
}

}  // namespace stackalign::cpu
