// The CPU refinement's statistics for one level (9 shifts, 2D), on THREADS
// threads (default 1): the cost per pixel and shift of the Parzen histograms on real
// frames, and a checksum of the words, which must not change when the
// histograms' pass does. Best of `rounds` batches.
// Build: g++ -O3 -std=c++17 -fopenmp -I. bench/probes/parzen_refine.cpp build/libstackalign.a \
//        -ltiff -lpng -lteem -lnifti2 -o build/parzen_refine
// Usage: parzen_refine STACK FIRST intensity|edges [ROUNDS [THREADS]]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/refine/refine.hpp"
#include "src/io/stack_io.hpp"

using namespace stackalign;

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: parzen_refine STACK FIRST intensity|edges [ROUNDS [THREADS]]\n");
        return 2;
    }
    omp_set_num_threads(argc > 5 ? std::atoi(argv[5]) : 1);
    FrameReader frames({argv[1]}, std::size_t(1) << 32);
    const int first = std::atoi(argv[2]);
    const RefineOn on = std::strcmp(argv[3], "edges") == 0 ? RefineOn::edges : RefineOn::intensity;
    const int rounds = argc > 4 ? std::atoi(argv[4]) : 20;
    const PreprocessParams pp{};
    const RefineFeatures ref = refine_features(*frames.read(first), on, pp), mov = refine_features(*frames.read(first + 1), on, pp);
    const int margin = std::min(ref.smooth.width, ref.smooth.height) / 8;
    const SearchWindow w{margin, margin, 0, ref.smooth.width - 2 * margin, ref.smooth.height - 2 * margin, 1};
    const RefineParams p = refine_params(ref, mov, w, IntShift{0, 0, 0}, ShiftRange{2, 2, 0}, Metric::mi);
    std::vector<ContinuousShift> shifts;
    for (int j = -1; j <= 1; ++j)
        for (int i = -1; i <= 1; ++i) shifts.push_back({0.3 + 0.75 * i, -0.2 + 0.75 * j, 0});
    double best = 1e9;
    std::uint64_t sum = 0;
    for (int r = 0; r < rounds; ++r) {
        const auto t = std::chrono::steady_clock::now();
        const std::vector<std::uint64_t> s = cpu::refine_statistics(ref, mov, p, shifts);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
        sum = 0;
        for (std::size_t k = 0; k < s.size(); ++k) sum = sum * 1000003u + s[k];
    }
    std::printf("%s %s %dx%d window, %d threads: %.2f ns per pixel and shift, checksum %016llx\n", argv[1], argv[3],
                w.width, w.height, omp_get_max_threads(), best / (9.0 * w.width * w.height) * 1e9, (unsigned long long)sum);
}
