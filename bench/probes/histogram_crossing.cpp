// Where the CPU search's two ways of counting histograms cross
// (cpu::CpuHistograms): frames FIRST and FIRST+1 of STACK as edge maps at
// thresholds from sparse to dense, windows of 64-384 px, max_shift 16; the
// dense pass and the nonzero lists timed alone, best of 7. It set
// kSparseBelow in kernels/mi_search/mi_search_cpu.cpp.
// Build: g++ -O2 -std=c++17 -fopenmp -I. bench/probes/histogram_crossing.cpp build/libstackalign.a \
//        -ltiff -lpng -lteem -lnifti2 -o build/histogram_crossing
// Usage: histogram_crossing STACK FIRST
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "kernels/mi_search/mi_search.hpp"
#include "kernels/preprocess/preprocess.hpp"
#include "src/io/stack_io.hpp"

using namespace stackalign;

namespace {
double seconds_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double nonzero_share(const BinImage& image, int x0, int y0, int size) {
    std::size_t n = 0;
    for (int y = y0; y < y0 + size; ++y)
        for (int x = x0; x < x0 + size; ++x) n += image.at(x, y) != 0;
    return double(n) / (double(size) * size);
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: histogram_crossing STACK FIRST\n");
        return 2;
    }
    FrameReader frames({argv[1]}, std::size_t(1) << 32);
    const int first = std::atoi(argv[2]);
    std::printf("| window | threshold | nonzero ref + moving | dense ms | lists ms | lists / dense |\n|---|---|---|---|---|---|\n");
    for (const int window : {64, 96, 192, 384})
        for (const float threshold : {30.f, 20.f, 14.f, 10.f, 7.f, 5.f}) {
            const PreprocessParams pp{1, true, threshold, 64};
            const BinImage a = cpu::preprocess(*frames.read(first), pp), b = cpu::preprocess(*frames.read(first + 1), pp);
            const int shift = std::min(16, (a.width - window) / 2);
            MiSearchParams p;
            p.bins = 64;
            p.max_shift = {shift, shift, 0};
            p.window = {(a.width - window) / 2, (a.height - window) / 2, 0, window, window, 1};
            const double share = nonzero_share(a, p.window.x, p.window.y, window) +
                                 nonzero_share(b, p.window.x - shift, p.window.y - shift, window + 2 * shift);
            double best[2] = {1e9, 1e9};
            for (int repeat = 0; repeat < 7; ++repeat)
                for (int way = 0; way < 2; ++way) {
                    const double t = seconds_now();
                    cpu::mi_map(a, b, p, way == 0 ? cpu::CpuHistograms::dense : cpu::CpuHistograms::sparse);
                    best[way] = std::min(best[way], seconds_now() - t);
                }
            std::printf("| %d | %.0f | %.2f | %.2f | %.2f | %.2f |\n", window, threshold, share, 1e3 * best[0],
                        1e3 * best[1], best[1] / best[0]);
        }
}
