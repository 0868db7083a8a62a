#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

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

namespace {
// The joint histograms of K candidates side by side along x, (sx, sy, sz),
// (sx + dx, sy, sz), ... (sx + (K - 1) dx, sy, sz), in one pass over the
// window: each reference pixel is read once for all of them, and their
// counters' increments are independent. Two at a time, a search took 57-65
// ms against 70-76 one at a time on the drift stack, 126-128 against
// 169-196 on the tilt series (2 cores, docs/benchmarks.md).
//
// Every pixel is counted, (0, 0) pairs too, without a branch. Skipping
// them behind a test was meant to spare the long chain of increments to
// that one counter, but the test mispredicted wherever edges and blanks
// mix, which cost more (`make bench-cpu`: the dense pass up to 2.8x slower with it).
template <int K>
void joint_histograms_along_x(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy,
                              int sz, std::uint32_t* const* hist, int dx = 1) {
    const unsigned bins = unsigned(p.bins);
    const SearchWindow& w = p.window;
    for (int k = 0; k < K; ++k) std::memset(hist[k], 0, sizeof(std::uint32_t) * bins * bins);
    for (int row = 0; row < w.height * w.depth; ++row) {
        const int y = row % w.height, z = row / w.height;
        const std::uint8_t* a = &ref.at(w.x, w.y + y, w.z + z);
        const std::uint8_t* b = &mov.at(w.x + sx, w.y + y + sy, w.z + z + sz);
        for (int x = 0; x < w.width; ++x) {
            const unsigned av = a[x] * bins;
            for (int k = 0; k < K; ++k) ++hist[k][av + b[x + k * dx]];
        }
    }
}

// The nonzero bins of a box of an image, row by row (rows of all slices in
// order), each row's x ascending and relative to the box; `before` counts a
// row's entries left of each column, so the entries inside a run of
// columns are found without a search.
struct NonzeroRows {
    int x0, y0, z0, width, height;
    std::vector<std::uint32_t> start;  // per row, and one past the last
    std::vector<std::uint16_t> x;
    std::vector<std::uint8_t> bin;
    std::vector<std::uint16_t> before;  // (width + 1) per row, when asked for

    // Columns and counts are 16-bit: fits(width) says whether a box that wide can be listed.
    static bool fits(int box_width) { return box_width <= 65535; }
    NonzeroRows(const BinImage& image, int x0_, int y0_, int z0_, int width_, int height_, int depth, bool counts)
        : x0(x0_), y0(y0_), z0(z0_), width(width_), height(height_), start(std::size_t(height_) * depth + 1, 0) {
        if (counts) before.resize(std::size_t(height) * depth * (width + 1));
        for (int row = 0; row < height * depth; ++row) {
            const std::uint8_t* v = &image.at(x0, y0 + row % height, z0 + row / height);
            std::uint16_t* left = counts ? &before[std::size_t(row) * (width + 1)] : nullptr;
            std::uint16_t in_row = 0;
            for (int i = 0; i < width; ++i) {
                if (left) left[i] = in_row;
                if (v[i] == 0) continue;
                x.push_back(std::uint16_t(i));
                bin.push_back(v[i]);
                ++in_row;
            }
            if (left) left[width] = in_row;
            start[row + 1] = std::uint32_t(x.size());
        }
    }
};

// Nonzero bins in a box (a loop the compiler vectorises).
std::size_t nonzero_in(const BinImage& image, int x0, int y0, int z0, int width, int height, int depth) {
    std::size_t n = 0;
    for (int row = 0; row < height * depth; ++row) {
        const std::uint8_t* v = &image.at(x0, y0 + row % height, z0 + row / height);
        unsigned in_row = 0;
        for (int i = 0; i < width; ++i) in_row += v[i] != 0;
        n += in_row;
    }
    return n;
}

// Whether the lists beat the dense pass for this search. Per candidate the
// dense pass reads and counts every window pixel; the lists visit the
// reference's nonzero pixels and the moving window's, with a cost per row
// and, once per search, the lists' making. Measured on real frames
// (bench/probes/histogram_crossing.cpp, one thread, docs/benchmarks.md):
// the two break even where the densities sum to 0.6-0.8 on the H100 host's
// Xeon and 0.55-0.7 on a 2-core EPYC; below 2^21 pixel-candidates, windows
// under 64^2 or rows under 32, the lists' fixed costs take what they save.
constexpr double kSparseBelow = 0.6;
bool sparse_is_sooner(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int box_x, int box_y,
                      int box_z, int box_w, int box_h, int box_d) {
    const SearchWindow& w = p.window;
    if (w.width < 32 || p.window_pixels() < 4096 || p.window_pixels() * p.candidates() < (std::int64_t(1) << 21))
        return false;
    const double ref_density = double(nonzero_in(ref, w.x, w.y, w.z, w.width, w.height, w.depth)) /
                               (double(w.width) * w.height * w.depth);
    const double mov_density = double(nonzero_in(mov, box_x, box_y, box_z, box_w, box_h, box_d)) /
                               (double(box_w) * box_h * box_d);
    return ref_density + mov_density < kSparseBelow;
}

// Joint histograms of K candidates (sx + k dx, sy, sz) from the windows'
// nonzero pixels alone: a pixel whose reference bin is not 0 from the
// reference's list, one whose reference bin is 0 and moving bin is not
// from the moving image's, and (0, 0) is what the window leaves. The same
// integers as joint_histograms_along_x, in time that follows the nonzero
// pixels: thresholded edge maps of real frames are 70-80 % zeros.
template <int K>
void sparse_joint_histograms(const NonzeroRows& ref_rows, const NonzeroRows& mov_rows, const BinImage& ref,
                             const BinImage& mov, const MiSearchParams& p, int sx, int sy, int sz,
                             std::uint32_t* const* hist, int dx) {
    const unsigned bins = unsigned(p.bins);
    const SearchWindow& w = p.window;
    for (int k = 0; k < K; ++k) std::memset(hist[k], 0, sizeof(std::uint32_t) * bins * bins);
    const std::uint16_t* rx = ref_rows.x.data();
    const std::uint8_t* ra = ref_rows.bin.data();
    const std::uint16_t* mx = mov_rows.x.data();
    const std::uint8_t* mb = mov_rows.bin.data();
    for (int row = 0; row < w.height * w.depth; ++row) {
        const int y = row % w.height, z = row / w.height;
        const std::uint8_t* b = &mov.at(w.x + sx, w.y + y + sy, w.z + z + sz);
        for (std::uint32_t e = ref_rows.start[row]; e < ref_rows.start[row + 1]; ++e) {
            const unsigned a = ra[e] * bins;
            for (int k = 0; k < K; ++k) ++hist[k][a + b[rx[e] + k * dx]];
        }
        const std::uint8_t* a = &ref.at(w.x, w.y + y, w.z + z);
        const std::size_t m = std::size_t(w.z + z + sz - mov_rows.z0) * mov_rows.height + (w.y + y + sy - mov_rows.y0);
        const std::uint16_t* left = &mov_rows.before[m * (mov_rows.width + 1)];
        for (int k = 0; k < K; ++k) {
            // Moving pixels at columns [c, c + w.width) of the list's box; a reference pixel i - c.
            const int c = w.x + sx + k * dx - mov_rows.x0;
            const std::uint32_t first = mov_rows.start[m] + left[c], last = mov_rows.start[m] + left[c + w.width];
            std::uint32_t* h = hist[k];
            for (std::uint32_t e = first; e < last; ++e) h[mb[e]] += a[mx[e] - c] == 0;
        }
    }
    const std::uint64_t listed = ref_rows.start.back();
    for (int k = 0; k < K; ++k) {
        std::uint64_t others = listed;
        for (unsigned v = 1; v < bins; ++v) others += hist[k][v];
        hist[k][0] = std::uint32_t(std::uint64_t(p.window_pixels()) - others);
    }
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
    return mi_map(ref, mov, p, CpuHistograms::automatic);
}

std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, CpuHistograms how) {
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
    // The box of the moving image that some candidate's window covers.
    const SearchWindow& w = p.window;
    const int box_x = w.x + c.x - m.x * st.x, box_y = w.y + c.y - m.y * st.y, box_z = w.z + c.z - m.z * st.z;
    const int box_w = w.width + 2 * m.x * st.x, box_h = w.height + 2 * m.y * st.y, box_d = w.depth + 2 * m.z * st.z;
    const bool sparse = paired && NonzeroRows::fits(box_w) &&
                        (how == CpuHistograms::sparse ||
                         (how == CpuHistograms::automatic && sparse_is_sooner(ref, mov, p, box_x, box_y, box_z, box_w, box_h, box_d)));
    // The lists' frames are mostly blank, and so are their histograms.
    const EmptyCells empty = sparse ? EmptyCells::skip : EmptyCells::add;
    std::optional<NonzeroRows> ref_rows, mov_rows;
    if (sparse) {
        ref_rows.emplace(ref, w.x, w.y, w.z, w.width, w.height, w.depth, false);
        mov_rows.emplace(mov, box_x, box_y, box_z, box_w, box_h, box_d, true);
    }
    #pragma omp parallel
    {
        std::vector<std::uint32_t> hist(std::size_t(2) * p.bins * p.bins);
        std::uint32_t* const both[2] = {hist.data(), hist.data() + std::size_t(p.bins) * p.bins};
        #pragma omp for schedule(dynamic, 1)
        for (int t = 0; t < (paired ? tasks : n); ++t) {
            const int i = paired ? (t / twos) * side_x + 2 * (t % twos) : t;
            const int sx = c.x + st.x * (i % side_x - m.x), sy = c.y + st.y * (i / side_x % side_y - m.y),
                      sz = c.z + st.z * (i / (side_x * side_y) - m.z);
            // The row's last candidate goes alone where the row is odd.
            const bool two = paired && i % side_x + 1 < side_x;
            if (sparse && two) sparse_joint_histograms<2>(*ref_rows, *mov_rows, ref, mov, p, sx, sy, sz, both, st.x);
            else if (sparse) sparse_joint_histograms<1>(*ref_rows, *mov_rows, ref, mov, p, sx, sy, sz, both, st.x);
            else if (two) joint_histograms_along_x<2>(ref, mov, p, sx, sy, sz, both, st.x);
            else joint_histogram(ref, mov, p, sx, sy, sz, both[0]);
            map[i] = score_from_histogram(both[0], p.bins, nlogn, p.metric, empty);
            if (two) map[i + 1] = score_from_histogram(both[1], p.bins, nlogn, p.metric, empty);
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
