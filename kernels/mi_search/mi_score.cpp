// Backend-independent pieces of the MI search: the entropy table, MI from a
// histogram, window checks and winner selection.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <tuple>

#include "../../src/core/error.hpp"
#include "mi_search.hpp"

namespace stackalign {

MiSearchParams square_search(int bins, int x, int y, int size_x, int size_y, int max_shift) {
    MiSearchParams p;
    p.bins = bins;
    p.window = {x, y, 0, size_x, size_y, 1};
    p.max_shift = {max_shift, max_shift, 0};
    return p;
}

std::string window_overflow(const MiSearchParams& p, int width, int height, int depth) {
    const SearchWindow& w = p.window;
    const ShiftRange& m = p.max_shift;
    if (w.width < 1 || w.height < 1 || w.depth < 1) return "the window is empty";
    const char* axis[3] = {"x", "y", "z"};
    const int start[3] = {w.x + p.centre.x, w.y + p.centre.y, w.z + p.centre.z}, size[3] = {w.width, w.height, w.depth},
              shift[3] = {m.x * p.step.x, m.y * p.step.y, m.z * p.step.z}, extent[3] = {width, height, depth};
    for (int a = 0; a < 3; ++a) {
        if (start[a] - shift[a] < 0)
            return std::string("it reaches ") + axis[a] + " = " + std::to_string(start[a] - shift[a]) + " (< 0)";
        if (start[a] + size[a] + shift[a] > extent[a])
            return std::string("it reaches ") + axis[a] + " = " + std::to_string(start[a] + size[a] + shift[a] - 1) +
                   " (>= " + std::to_string(extent[a]) + ")";
    }
    return {};
}

void check_window_fits(const MiSearchParams& p, int width, int height, int depth) {
    const std::string why = window_overflow(p, width, height, depth);
    if (why.empty()) return;
    const SearchWindow& w = p.window;
    std::string size = std::to_string(w.width) + "x" + std::to_string(w.height);
    std::string at = "(" + std::to_string(w.x) + "," + std::to_string(w.y);
    std::string frame = std::to_string(width) + "x" + std::to_string(height);
    std::string shift = std::to_string(p.max_shift.x);
    if (depth > 1) {
        size += "x" + std::to_string(w.depth);
        at += "," + std::to_string(w.z);
        frame += "x" + std::to_string(depth);
        shift = "[" + shift + ", " + std::to_string(p.max_shift.y) + ", " + std::to_string(p.max_shift.z) + "]";
    }
    throw InputError("search window " + size + " at " + at + ") moved by up to max_shift " + shift + " leaves the " +
                     frame + (depth > 1 ? " volume: " : " frame: ") + why);
}

std::vector<double> nlogn_table(std::int64_t max_count) {
    std::vector<double> t(std::size_t(max_count) + 1, 0.0);
    for (std::int64_t c = 1; c <= max_count; ++c) t[c] = double(c) * std::log(double(c));
    return t;
}

std::shared_ptr<const std::vector<double>> shared_nlogn_table(std::int64_t max_count) {
    static std::mutex lock;
    static std::shared_ptr<const std::vector<double>> table;
    const std::lock_guard<std::mutex> hold(lock);
    if (!table || std::int64_t(table->size()) <= max_count)
        table = std::make_shared<const std::vector<double>>(nlogn_table(max_count));
    return table;
}

double mi_from_histogram(const std::uint32_t* hist, int bins, const std::vector<double>& nlogn) {
    return score_from_histogram(hist, bins, nlogn, Metric::mi);
}

namespace {
// MI's and NMI's sums of c log c over the marginals and the joint histogram.
// Four partial sums of the joint (one dependency chain was the limit), no
// allocation; with Skip, groups of four empty cells passed over (nlogn[0]
// is 0, so adding them changes no sum).
template <bool Skip>
double entropy_score(const std::uint32_t* hist, int bins, const std::vector<double>& nlogn, Metric metric) {
    std::uint64_t col[kMaxBins] = {}, n = 0;
    double joint[4] = {0, 0, 0, 0}, marg = 0;
    const int whole = bins - bins % 4;
    for (int a = 0; a < bins; ++a) {
        const std::uint32_t* r = hist + std::size_t(a) * bins;
        std::uint64_t row = 0;
        for (int b = 0; b < whole; b += 4) {
            if (Skip && (r[b] | r[b + 1] | r[b + 2] | r[b + 3]) == 0) continue;
            for (int k = 0; k < 4; ++k) {
                row += r[b + k];
                col[b + k] += r[b + k];
                joint[k] += nlogn[r[b + k]];
            }
        }
        for (int b = whole; b < bins; ++b) {
            row += r[b];
            col[b] += r[b];
            joint[b % 4] += nlogn[r[b]];
        }
        n += row;
        marg += nlogn[row];
    }
    for (int b = 0; b < bins; ++b) marg += nlogn[col[b]];
    return score_from_sums(marg, (joint[0] + joint[1]) + (joint[2] + joint[3]), double(n), metric);
}
}  // namespace

// H(X) = log N - (1/N) sum c log c, so MI and NMI need only the sums of
// c log c over the marginals and over the joint histogram (score_from_sums).
// NCC and CR need integer moments of the values, exact from the histogram.
// The CPU search scores every candidate here: a third of its time on small
// windows.
double score_from_histogram(const std::uint32_t* hist, int bins, const std::vector<double>& nlogn, Metric metric,
                            EmptyCells empty) {
    if (metric == Metric::ncc) {
        unsigned long long n = 0, sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
        for (unsigned a = 0; a < unsigned(bins); ++a)
            for (unsigned b = 0; b < unsigned(bins); ++b) {
                const unsigned long long c = hist[a * bins + b];
                n += c;
                sa += a * c;
                sb += b * c;
                saa += a * a * c;
                sbb += b * b * c;
                sab += a * b * c;
            }
        return ncc_from_moments(n, sa, sb, saa, sbb, sab);
    }
    if (metric == Metric::cr) {
        std::vector<BinMoments> m(bins);
        for (int a = 0; a < bins; ++a)
            for (unsigned b = 0; b < unsigned(bins); ++b) {
                const unsigned long long c = hist[a * bins + b];
                m[a].n += c;
                m[a].s += b * c;
                m[a].q += b * b * c;
            }
        return cr_from_moments(m.data(), bins);
    }
    return empty == EmptyCells::skip ? entropy_score<true>(hist, bins, nlogn, metric)
                                     : entropy_score<false>(hist, bins, nlogn, metric);
}

MiPeak peak_from_map(const std::vector<double>& map, const ShiftRange& m, const ShiftStep& step) {
    const int side_x = 2 * m.x + 1, side_y = 2 * m.y + 1, side_z = 2 * m.z + 1;
    MiPeak peak;
    auto index_of = [&](int i) { return std::make_tuple(i % side_x - m.x, i / side_x % side_y - m.y, i / (side_x * side_y) - m.z); };
    double best = -std::numeric_limits<double>::infinity(), sum = 0, sum2 = 0, n = 0;
    for (int i = 0; i < int(map.size()); ++i) {
        const double v = map[i];
        best = std::max(best, v);
        const auto [kx, ky, kz] = index_of(i);
        if (!on_sharpness_lattice(kx, m.x) || !on_sharpness_lattice(ky, m.y) || !on_sharpness_lattice(kz, m.z)) continue;
        sum += v;
        sum2 += v * v;
        n += 1;
    }
    const double tol = 1e-9 * std::max(1.0, std::fabs(best));
    auto l1 = [&](int i) {
        const auto [kx, ky, kz] = index_of(i);
        return std::abs(kx) * step.x + std::abs(ky) * step.y + std::abs(kz) * step.z;
    };
    int best_i = -1;
    for (int i = 0; i < int(map.size()); ++i)
        if (map[i] >= best - tol && (best_i < 0 || l1(i) < l1(best_i))) best_i = i;
    const auto [bx, by, bz] = index_of(best_i);
    peak.dx = bx * step.x, peak.dy = by * step.y, peak.dz = bz * step.z;
    peak.mi = map[best_i];
    const double nan = std::numeric_limits<double>::quiet_NaN();
    auto at = [&](int kx, int ky, int kz) {
        const int x = kx + m.x, y = ky + m.y, z = kz + m.z;
        return (x >= 0 && x < side_x && y >= 0 && y < side_y && z >= 0 && z < side_z)
                   ? map[(std::size_t(z) * side_y + y) * side_x + x]
                   : nan;
    };
    for (int j = -1; j <= 1; ++j)
        for (int i = -1; i <= 1; ++i) peak.around[j + 1][i + 1] = at(bx + i, by + j, bz);
    for (int k = -1; k <= 1; ++k) peak.around_z[k + 1] = at(bx, by, bz + k);
    peak.mean = sum / n;
    peak.stddev = std::sqrt(std::max(0.0, sum2 / n - peak.mean * peak.mean));
    return peak;
}

}  // namespace stackalign
