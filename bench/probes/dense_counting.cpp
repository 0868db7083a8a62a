// The CPU search's dense pass and its score, each two ways (session 28):
// counting every pixel without a branch (now) against skipping (0, 0)
// pairs behind a test (before), two candidates a pass; and the score's scan
// adding empty cells (now, for the dense pass) against testing each group of
// four for empty (kept for the nonzero lists' sparse histograms). One
// thread, best of 15 passes over the candidates -16..15 x -16..16 (two at a
// time along x); the two counts and the two scans must agree exactly. A
// table row: window, the reference frame's nonzero share, nonzero groups
// of four cells in a histogram (mean), then ms: counting with the test,
// without it, the scan testing groups, the scan adding them.
// Build: g++ -O2 -std=c++17 -fopenmp -I. bench/probes/dense_counting.cpp build/libstackalign.a \
//        -ltiff -lpng -lteem -lnifti2 -o build/dense_counting
// Usage: dense_counting STACK FIRST [THRESHOLD WIDTH HEIGHT]   (defaults 20, 112, 87)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/mi_search/mi_search.hpp"
#include "kernels/preprocess/preprocess.hpp"
#include "src/io/stack_io.hpp"

using namespace stackalign;

namespace {
double seconds_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Two candidates (sx, sy) and (sx + 1, sy) in one pass; Test: (0, 0) pairs
// skipped behind a test and their count derived, as before session 28.
template <bool Test>
__attribute__((noinline)) void count_two(const BinImage& ref, const BinImage& mov, const SearchWindow& w, int sx,
                                         int sy, std::uint32_t* h0, std::uint32_t* h1) {
    std::memset(h0, 0, sizeof(std::uint32_t) * 64 * 64);
    std::memset(h1, 0, sizeof(std::uint32_t) * 64 * 64);
    std::uint64_t others[2] = {0, 0};
    for (int y = 0; y < w.height; ++y) {
        const std::uint8_t* a = &ref.at(w.x, w.y + y, 0);
        const std::uint8_t* b = &mov.at(w.x + sx, w.y + y + sy, 0);
        for (int x = 0; x < w.width; ++x) {
            const unsigned av = a[x], b0 = b[x], b1 = b[x + 1];
            if (!Test) {
                ++h0[av * 64 + b0];
                ++h1[av * 64 + b1];
                continue;
            }
            if ((av | b0) != 0) ++h0[av * 64 + b0], ++others[0];
            if ((av | b1) != 0) ++h1[av * 64 + b1], ++others[1];
        }
    }
    if (Test) {
        h0[0] = std::uint32_t(std::uint64_t(w.width) * w.height - others[0]);
        h1[0] = std::uint32_t(std::uint64_t(w.width) * w.height - others[1]);
    }
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: dense_counting STACK FIRST [THRESHOLD WIDTH HEIGHT]\n");
        return 2;
    }
    FrameReader frames({argv[1]}, std::size_t(1) << 32);
    const int first = std::atoi(argv[2]);
    const float threshold = argc > 3 ? float(std::atof(argv[3])) : 20.0f;
    const int ww = argc > 4 ? std::atoi(argv[4]) : 112, wh = argc > 5 ? std::atoi(argv[5]) : 87;
    const PreprocessParams pp{1, true, threshold, 64};
    const BinImage a = cpu::preprocess(*frames.read(first), pp), b = cpu::preprocess(*frames.read(first + 1), pp);
    if (a.width < ww + 32 || a.height < wh + 32) {
        std::fprintf(stderr, "a %dx%d window with +-16 px does not fit the %dx%d frames\n", ww, wh, a.width, a.height);
        return 2;
    }
    const SearchWindow w{(a.width - ww) / 2, (a.height - wh) / 2, 0, ww, wh, 1};
    const std::vector<double> nlogn = nlogn_table(std::int64_t(ww) * wh);
    std::vector<std::uint32_t> h(4 * 64 * 64);
    std::uint32_t *t0 = h.data(), *t1 = t0 + 4096, *n0 = t1 + 4096, *n1 = n0 + 4096;
    double best[4] = {1e9, 1e9, 1e9, 1e9}, nonzero_groups = 0;
    bool same = true;
    for (int repeat = 0; repeat < 15; ++repeat) {
        double took[4] = {0, 0, 0, 0};
        for (int sy = -16; sy <= 16; ++sy)
            for (int sx = -16; sx < 16; sx += 2) {
                double t = seconds_now();
                count_two<true>(a, b, w, sx, sy, t0, t1);
                took[0] += seconds_now() - t;
                t = seconds_now();
                count_two<false>(a, b, w, sx, sy, n0, n1);
                took[1] += seconds_now() - t;
                t = seconds_now();
                const double skip = score_from_histogram(n0, 64, nlogn, Metric::mi, EmptyCells::skip);
                took[2] += seconds_now() - t;
                t = seconds_now();
                const double add = score_from_histogram(n0, 64, nlogn, Metric::mi, EmptyCells::add);
                took[3] += seconds_now() - t;
                same = same && skip == add && std::memcmp(t0, n0, 2 * 4096 * sizeof(std::uint32_t)) == 0;
                if (repeat == 0)
                    for (int g = 0; g < 4096; g += 4) nonzero_groups += (n0[g] | n0[g + 1] | n0[g + 2] | n0[g + 3]) != 0;
            }
        for (int k = 0; k < 4; ++k) best[k] = std::min(best[k], took[k]);
    }
    const double scored = 33.0 * 16.0;  // the first of each pair
    std::printf("| %dx%d at threshold %.0f | %.1f %% | %.0f / 1024 | %.2f | %.2f | %.2f | %.2f | %s |\n", ww, wh,
                double(threshold), 100.0 * double(std::count_if(a.pixels.begin(), a.pixels.end(), [](int v) { return v; })) / double(a.pixels.size()),
                nonzero_groups / scored, 1e3 * best[0], 1e3 * best[1], 1e3 * best[2], 1e3 * best[3],
                same ? "yes" : "NO");
    return same ? 0 : 1;
}
