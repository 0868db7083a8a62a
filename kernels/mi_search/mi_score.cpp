// Backend-independent pieces of the MI search: the entropy table, MI from a
// histogram, window checks and winner selection.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "../../src/error.hpp"
#include "mi_search.hpp"

namespace stackalign {

void check_window_fits(const MiSearchParams& p, int width, int height) {
    const SearchWindow& w = p.window;
    const int m = p.max_shift;
    if (w.width < 1 || w.height < 1 || w.x - m < 0 || w.y - m < 0 || w.x + w.width + m > width ||
        w.y + w.height + m > height)
        throw InputError("search window " + std::to_string(w.width) + "x" + std::to_string(w.height) + " at (" +
                         std::to_string(w.x) + "," + std::to_string(w.y) + ") moved by up to max_shift " +
                         std::to_string(m) + " leaves the " + std::to_string(width) + "x" + std::to_string(height) +
                         " frame");
}

std::vector<double> nlogn_table(std::int64_t max_count) {
    std::vector<double> t(std::size_t(max_count) + 1, 0.0);
    for (std::int64_t c = 1; c <= max_count; ++c) t[c] = double(c) * std::log(double(c));
    return t;
}

double mi_from_histogram(const std::uint32_t* hist, int bins, const std::vector<double>& nlogn) {
    std::vector<std::uint64_t> row(bins, 0), col(bins, 0);
    std::uint64_t n = 0;
    double joint = 0;
    for (int a = 0; a < bins; ++a)
        for (int b = 0; b < bins; ++b) {
            const std::uint32_t c = hist[a * bins + b];
            row[a] += c;
            col[b] += c;
            joint += nlogn[c];
        }
    double marg = 0;
    for (int i = 0; i < bins; ++i) {
        n += row[i];
        marg += nlogn[row[i]] + nlogn[col[i]];
    }
    if (n == 0) return 0.0;
    // H(X) = log N - (1/N) sum c log c, so MI = log N - (sum_A + sum_B - sum_AB) / N.
    return std::log(double(n)) - (marg - joint) / double(n);
}

MiPeak peak_from_map(const std::vector<double>& map, int m) {
    const int side = 2 * m + 1;
    MiPeak peak;
    double best = -std::numeric_limits<double>::infinity(), sum = 0, sum2 = 0;
    for (double v : map) {
        best = std::max(best, v);
        sum += v;
        sum2 += v * v;
    }
    const double tol = 1e-9 * std::max(1.0, std::fabs(best));
    int best_i = -1;
    auto rank = [&](int i) {
        const int sx = i % side - m, sy = i / side - m;
        return std::make_tuple(std::abs(sx) + std::abs(sy), sy, sx);
    };
    for (int i = 0; i < int(map.size()); ++i)
        if (map[i] >= best - tol && (best_i < 0 || rank(i) < rank(best_i))) best_i = i;
    peak.dx = best_i % side - m;
    peak.dy = best_i / side - m;
    peak.mi = map[best_i];
    for (int j = -1; j <= 1; ++j)
        for (int i = -1; i <= 1; ++i) {
            const int x = peak.dx + i + m, y = peak.dy + j + m;
            peak.around[j + 1][i + 1] =
                (x >= 0 && x < side && y >= 0 && y < side) ? map[y * side + x] : std::numeric_limits<double>::quiet_NaN();
        }
    const double n = double(map.size());
    peak.mean = sum / n;
    peak.stddev = std::sqrt(std::max(0.0, sum2 / n - peak.mean * peak.mean));
    return peak;
}

}  // namespace stackalign
