// `bench methods`: every similarity measure, histogram strategy and the MTB
// projections on the same real workload, measured in one run: time per
// pair, pair-updates/s, and the error of the shifts they recover.
//
// Workload: crops of the real Drosophila frame 6 (sample_data), 448x448,
// the moving crop's corner displaced by a seeded random shift in [-12, 12]^2,
// window 320x320, max_shift 16 (1089 candidates), 64 bins; the same pairs
// clean, with independent noise in both crops, and noisy with the moving
// crop's brightness changed (gain 0.6 + gamma 0.5, gamma 2.0), the case MTB
// is meant for.
#include "methods.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../kernels/cuda_api.hpp"
#include "../kernels/mi_search/mi_search.hpp"
#include "../kernels/mtb/mtb_projection.hpp"
#include "../kernels/preprocess/preprocess.hpp"
#include "../src/io/tiff_io.hpp"

namespace stackalign::bench {
namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_ms(int repeats, const F& f) {
    std::vector<double> t;
    for (int i = 0; i < repeats; ++i) {
        const auto s = Clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

RawFrame crop(const RawFrame& f, int x, int y, int w, int h) {
    RawFrame out;
    out.type = f.type;
    out.width = w;
    out.height = h;
    const std::size_t bpp = f.bytes.size() / f.pixel_count();
    out.bytes.resize(std::size_t(w) * h * bpp);
    for (int r = 0; r < h; ++r)
        std::memcpy(&out.bytes[std::size_t(r) * w * bpp], &f.bytes[(std::size_t(y + r) * f.width + x) * bpp], w * bpp);
    return out;
}

// A float frame with every pixel of `f` passed through `map`.
template <typename Map>
RawFrame mapped(const RawFrame& f, Map map) {
    const ImageF v = f.to_float();
    RawFrame out;
    out.type = PixelType::f32;
    out.width = f.width;
    out.height = f.height;
    out.bytes.resize(v.pixels.size() * 4);
    for (std::size_t i = 0; i < v.pixels.size(); ++i) {
        const float x = float(map(double(v.pixels[i])));
        std::memcpy(&out.bytes[i * 4], &x, 4);
    }
    return out;
}

// v -> top * gain * (v / top)^gamma, as a camera or a changed exposure would.
RawFrame brightness_changed(const RawFrame& f, double gain, double gamma) {
    const ImageF v = f.to_float();
    const double top = *std::max_element(v.pixels.begin(), v.pixels.end());
    return mapped(f, [&](double x) { return top * gain * std::pow(x / top, gamma); });
}

struct KnownPair {
    RawFrame ref, mov;
    int dx, dy;  // the shift a search should find
};

// Independent Gaussian noise of sd `fraction` of the frame's range, seeded.
RawFrame noisy(const RawFrame& f, double fraction, unsigned seed) {
    const ImageF v = f.to_float();
    const auto [lo, hi] = std::minmax_element(v.pixels.begin(), v.pixels.end());
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0.0, fraction * (*hi - *lo));
    return mapped(f, [&](double x) { return std::max(0.0, x + noise(rng)); });
}

struct Condition {
    const char* name;
    double noise, gain, gamma;
};
const Condition kConditions[] = {{"clean", 0, 1, 1},
                                 {"noise 8%", 0.08, 1, 1},
                                 {"noise, gain 0.6 + gamma 0.5", 0.08, 0.6, 0.5},
                                 {"noise, gamma 2.0", 0.08, 1, 2.0}};

std::vector<KnownPair> known_pairs(const RawFrame& frame, const Condition& c, int count) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> shift(-12, 12);
    std::vector<KnownPair> out;
    for (int i = 0; i < count; ++i) {
        const int tx = shift(rng), ty = shift(rng);
        RawFrame ref = crop(frame, 32, 32, 448, 448), mov = crop(frame, 32 + tx, 32 + ty, 448, 448);
        if (c.noise > 0) {
            ref = noisy(ref, c.noise, 100 + 2 * i);
            mov = noisy(mov, c.noise, 101 + 2 * i);
        }
        if (c.gain != 1 || c.gamma != 1) mov = brightness_changed(mov, c.gain, c.gamma);
        out.push_back({std::move(ref), std::move(mov), -tx, -ty});
    }
    return out;
}

struct Accuracy {
    int exact = 0, pairs = 0;
    double sum2 = 0;
    void add(const MiPeak& p, const KnownPair& k) {
        ++pairs;
        exact += p.dx == k.dx && p.dy == k.dy;
        sum2 += double(p.dx - k.dx) * (p.dx - k.dx) + double(p.dy - k.dy) * (p.dy - k.dy);
    }
    std::string str() const {
        char b[64];
        std::snprintf(b, sizeof b, "%d/%d, %.2f", exact, pairs, pairs ? std::sqrt(sum2 / pairs) : 0.0);
        return b;
    }
};

}  // namespace

void methods() {
    const Stack s = read_tiff_stack(std::string(STACKALIGN_SOURCE_DIR) + "/sample_data/drosophila_embryo_13x512x512.tif");
    const RawFrame& frame = s.frames[6];
    const int pairs = 8;
    const PreprocessParams pre{1, true, 20.0f, 64};
    const MiSearchParams base = square_search(64, 64, 64, 320, 320, 16);
    const double updates = double(base.window_pixels()) * base.candidates();
    const bool gpu = cuda::device_count() > 0;
    std::printf("## Methods side by side: `build/bench methods`\n\n");
    std::printf("Machine: %s; host: %d threads. Workload: %d crops 448x448 of the real Drosophila frame 6, moved by "
                "seeded shifts in [-12, 12]^2; window 320x320, max_shift 16 (%d candidates), 64 bins, default "
                "preprocessing; each condition is the same pairs, clean, with independent Gaussian noise (sd 8%% "
                "of the range) in both crops, and noisy with the moving crop's brightness changed. "
                "Accuracy: integer peaks exactly right / pairs, RMS error in px. GPU times are kernel times of one "
                "search (median of 10, CUDA events) from preprocessed bins; CPU times are wall times of one search; "
                "MTB times include building one frame's projections (upload included on the GPU).\n\n",
                gpu ? cuda::device_name(0).c_str() : "no GPU", omp_get_num_procs(), pairs, base.candidates());

    std::vector<std::vector<KnownPair>> conditions;
    for (const Condition& c : kConditions) conditions.push_back(known_pairs(frame, c, pairs));
    struct Prepared {
        BinImage ref, mov;
    };
    std::vector<std::vector<Prepared>> bins(conditions.size());
    for (std::size_t c = 0; c < conditions.size(); ++c)
        for (const KnownPair& k : conditions[c]) bins[c].push_back({cpu::preprocess(k.ref, pre), cpu::preprocess(k.mov, pre)});

    std::printf("| method | metric | backend / strategy | ms/pair | G pair-updates/s | vs CPU |");
    for (const Condition& c : kConditions) std::printf(" %s |", c.name);
    std::printf("\n|---|---|---|---|---|---|---|---|---|---|\n");

    // Accuracy is a property of the metric (every exact strategy gives the
    // CPU's histograms: tests/test_methods.cpp), so it is measured once per
    // metric on the CPU, and once for the sampled approximation.
    auto accuracy_of = [&](MiSearchParams p) {
        std::string out;
        for (std::size_t c = 0; c < conditions.size(); ++c) {
            Accuracy a;
            for (std::size_t i = 0; i < conditions[c].size(); ++i)
                a.add(cpu::mi_search(bins[c][i].ref, bins[c][i].mov, p), conditions[c][i]);
            out += " " + a.str() + " |";
        }
        return out;
    };
    const Prepared& timed = bins[0][0];
    for (const Metric metric : {Metric::mi, Metric::nmi, Metric::ncc, Metric::cr}) {
        MiSearchParams p = base;
        p.metric = metric;
        const std::string acc = accuracy_of(p);
        const double cpu_ms = median_ms(3, [&] { cpu::mi_search(timed.ref, timed.mov, p); });
        std::printf("| window | %s | CPU, %d threads | %.2f | %.2f | 1x |%s\n", to_string(metric).c_str(),
                    omp_get_num_procs(), cpu_ms, updates / cpu_ms / 1e6, acc.c_str());
        if (!gpu) continue;
        // Each strategy with its policy's defaults; presorted also with Li & Kumar's workloads.
        std::vector<std::pair<HistogramStrategy, int>> runs;
        for (const HistogramStrategy st : cuda::strategies(p)) runs.push_back({st, 0});
        if (metric == Metric::cr)
            for (int w : {256, 512, 768, 1024}) runs.push_back({HistogramStrategy::presorted, w});
        for (const auto& [st, workload] : runs) {
            const double ms = cuda::time_search_ms(timed.ref, timed.mov, p, st, 10, 0, workload);
            const std::string label = st != HistogramStrategy::presorted ? name_of(st)
                                      : "presorted (" + std::to_string(workload ? workload : 2048) + ")";
            std::printf("| window | %s | GPU %s | %.3f | %.1f | %.0fx | (as CPU) | | | |\n", to_string(metric).c_str(),
                        label.c_str(), ms, updates / ms / 1e6, cpu_ms / ms);
        }
    }
    {
        MiSearchParams p = base;
        p.sample_stride = kPartitionSampleStride;
        const std::string acc = accuracy_of(p);
        const double cpu_ms = median_ms(3, [&] { cpu::mi_search(timed.ref, timed.mov, p); });
        std::printf("| window | mi, sampled 1/%d | CPU twin | %.2f | %.2f | 1x |%s\n", kPartitionSampleStride, cpu_ms,
                    updates / cpu_ms / 1e6, acc.c_str());
        if (gpu) {
            const double ms = cuda::time_search_ms(timed.ref, timed.mov, p, HistogramStrategy::bin_partitioned, 10);
            std::printf("| window | mi, sampled 1/%d | GPU bin-partitioned-sampled | %.3f | %.1f | %.0fx | (as CPU) | | | |\n",
                        kPartitionSampleStride, ms, updates / ms / 1e6, cpu_ms / ms);
        }
    }
    {
        const MtbParams mp{4, base.window, base.max_shift};
        std::string acc;
        for (const auto& cond : conditions) {
            Accuracy a;
            for (const KnownPair& k : cond) a.add(mtb_search(cpu::mtb_projections(k.ref, mp), cpu::mtb_projections(k.mov, mp), mp), k);
            acc += " " + a.str() + " |";
        }
        const KnownPair& k = conditions[0][0];
        const MtbProjections r = cpu::mtb_projections(k.ref, mp);
        const double cpu_ms = median_ms(5, [&] { mtb_search(r, cpu::mtb_projections(k.mov, mp), mp); });
        std::printf("| mtb-projection | - | CPU, %d threads | %.3f | - | 1x |%s\n", omp_get_num_procs(), cpu_ms, acc.c_str());
        if (gpu) {
            cuda::mtb_projections(k.mov, mp);  // warm-up
            const double ms = median_ms(10, [&] { mtb_search(r, cuda::mtb_projections(k.mov, mp), mp); });
            std::printf("| mtb-projection | - | GPU | %.3f | - | %.1fx | (as CPU) | | | |\n", ms, cpu_ms / ms);
        }
    }

    // What sampling does to the MI curve: MI along x through the true shift.
    {
        const Prepared& pr = bins[0][0];
        const KnownPair& k = conditions[0][0];
        MiSearchParams p = base, q = base;
        q.sample_stride = kPartitionSampleStride;
        const std::vector<double> full = cpu::mi_map(pr.ref, pr.mov, p), sampled = cpu::mi_map(pr.ref, pr.mov, q);
        std::printf("\nMI along x at dy = %d (true dx = %d), every pixel vs the 1/%d bin-partitioned sample:\n\n| dx |",
                    k.dy, k.dx, kPartitionSampleStride);
        const int row = k.dy + base.max_shift.y, side = base.side_x();
        for (int dx = k.dx - 4; dx <= k.dx + 4; ++dx) std::printf(" %d |", dx);
        std::printf("\n|---|---|---|---|---|---|---|---|---|---|\n| all pixels |");
        for (int dx = k.dx - 4; dx <= k.dx + 4; ++dx) std::printf(" %.4f |", full[row * side + dx + base.max_shift.x]);
        std::printf("\n| sampled |");
        for (int dx = k.dx - 4; dx <= k.dx + 4; ++dx) std::printf(" %.4f |", sampled[row * side + dx + base.max_shift.x]);
        const MiPeak a = peak_from_map(full, base.max_shift), b = peak_from_map(sampled, base.max_shift);
        std::printf("\n\nPeak sharpness ((max - mean) / sd over all candidates): all pixels %.1f, sampled %.1f.\n",
                    a.sharpness(), b.sharpness());
    }
    if (gpu) {
        // Adaptive: what the model chose on this workload, and at 128 bins.
        std::printf("\nAdaptive configuration on the first pair: %s\n",
                    cuda::describe_search(timed.ref, timed.mov, base, HistogramStrategy::adaptive).c_str());
        const PreprocessParams pre128{1, true, 20.0f, 128};
        const KnownPair& k = conditions[0][0];
        const BinImage r = cpu::preprocess(k.ref, pre128), m = cpu::preprocess(k.mov, pre128);
        MiSearchParams p = base;
        p.bins = 128;
        std::printf("\n128 bins (MI), GPU ms/pair:");
        for (const HistogramStrategy st : cuda::strategies(p))
            std::printf(" %s %.3f;", name_of(st).c_str(), cuda::time_search_ms(r, m, p, st, 10));
        std::printf("\n");
    }
}

}  // namespace stackalign::bench
