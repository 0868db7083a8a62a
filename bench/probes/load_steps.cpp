// What a CPU load costs, step by step: for every frame of
// STACK, what a coarse-to-fine searcher's load makes (the normalised frame,
// its mean filter, Sobel and bins; the refinement's edge features, smoothed
// and prefiltered; the 2 x 2 block means and their bins), on THREADS
// threads (default 1). Prints the microseconds per frame of each part, the
// best of ROUNDS passes over the stack, and a hash of every product's bits
// (with intensity features and 3 x 3 block means too), which must not
// change when a step is made faster.
// Build: g++ -O3 -std=c++17 -fopenmp -ffp-contract=off -fno-math-errno -I. bench/probes/load_steps.cpp \
//        build/libstackalign.a -ltiff -lpng -lteem -lnifti2 -o build/load_steps
// Usage: load_steps STACK [ROUNDS [THREADS]]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "kernels/preprocess/preprocess.hpp"
#include "kernels/refine/refine.hpp"
#include "src/core/image.hpp"
#include "src/io/stack_io.hpp"

using namespace stackalign;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// FNV-1a over the bytes of everything handed to it.
struct Hash {
    unsigned long long h = 1469598103934665603ull;
    template <typename T>
    void add(const std::vector<T>& v) {
        const auto* p = reinterpret_cast<const unsigned char*>(v.data());
        for (std::size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ p[i]) * 1099511628211ull;
    }
};

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: load_steps STACK [ROUNDS [THREADS]]\n");
        return 2;
    }
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
    omp_set_num_threads(argc > 3 ? std::atoi(argv[3]) : 1);
    FrameReader reader({argv[1]}, std::size_t(1) << 32);
    std::vector<std::shared_ptr<const RawFrame>> frames;
    for (int k = 0; k < reader.size(); ++k) frames.push_back(reader.read(k));
    PreprocessParams fine{}, coarse{};
    fine.bins = 64;
    coarse.bins = 32;

    Hash hash;
    for (const auto& f : frames) {
        cpu::Preprocessed made = cpu::preprocess_keeping(*f, fine);
        hash.add(made.normalised.pixels), hash.add(made.values.pixels), hash.add(made.bins.pixels);
        const RefineFeatures edges = refine_features_from(made.values, RefineOn::edges, 0.65f);
        const RefineFeatures intensity = refine_features_from(made.normalised, RefineOn::intensity, 1.0f);
        for (const RefineFeatures* r : {&edges, &intensity}) hash.add(r->smooth.pixels), hash.add(r->coefficients.pixels);
        for (int factor : {2, 3}) {
            const RawFrame means = block_mean(*f, factor);
            hash.add(means.bytes), hash.add(cpu::preprocess(means, coarse).pixels);
        }
    }

    double best[4] = {1e9, 1e9, 1e9, 1e9};  // the whole load, fine preprocessing, features, coarse
    for (int r = 0; r < rounds; ++r) {
        double part[4] = {};
        for (const auto& f : frames) {
            const auto t0 = Clock::now();
            cpu::Preprocessed made = cpu::preprocess_keeping(*f, fine);
            const auto t1 = Clock::now();
            const RefineFeatures edges = refine_features_from(std::move(made.values), RefineOn::edges, 0.65f);
            const auto t2 = Clock::now();
            const BinImage bins = cpu::preprocess(block_mean(*f, 2), coarse);
            part[0] += since(t0);
            part[1] += std::chrono::duration<double>(t1 - t0).count();
            part[2] += std::chrono::duration<double>(t2 - t1).count();
            part[3] += since(t2);
        }
        for (int i = 0; i < 4; ++i) best[i] = std::min(best[i], part[i] / double(frames.size()));
    }
    std::printf("%s, %d frames of %dx%d, %d threads: a load %.1f us (fine preprocessing %.1f, edge features %.1f, "
                "block means %.1f); hash %016llx\n",
                argv[1], int(frames.size()), frames[0]->width, frames[0]->height, omp_get_max_threads(), best[0] * 1e6,
                best[1] * 1e6, best[2] * 1e6, best[3] * 1e6, hash.h);
}
