// Continuous refinement (kernels/refine): no grid bias on a real frame moved
// by known fractional shifts, every metric, CPU == CUDA histograms and shifts.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstring>

#include "../kernels/cuda_api.hpp"
#include "../kernels/pair_searcher.hpp"
#include "../kernels/refine/feature_filters.hpp"
#include "../kernels/refine/pair_moments.hpp"
#include "../kernels/refine/parzen.hpp"
#include "../kernels/refine/refine.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

const char* kDrosophila = "sample_data/drosophila_embryo_13x512x512.tif";


SearchSetup pair_setup(Metric metric, Subpixel subpixel) {
    SearchSetup s;
    s.search = square_search(64, 156, 156, 200, 200, 8);
    s.search.metric = metric;
    s.refine_metric = metric;
    s.subpixel = subpixel;
    return s;
}

// The refined shift of `mov` against `ref` by one backend's searcher.
ContinuousShift refined(const Device& device, const SearchSetup& setup, const RawFrame& ref, const RawFrame& mov) {
    auto searcher = make_pair_searcher(device, setup);
    searcher->load(0, ref);
    searcher->load(1, mov);
    const MiPeak peak = searcher->search(0, 1);
    return setup.subpixel == Subpixel::continuous ? searcher->refine(0, 1, peak) : parabola_peak(peak);
}

struct Errors {
    double mean_x = 0, mean_y = 0, mean_abs_x = 0, mean_abs_y = 0, worst = 0;
};

Errors fraction_sweep(Metric metric, Subpixel subpixel, double step) {
    const RawFrame& base = sample_frame(kDrosophila, 6);
    Errors e;
    int n = 0;
    for (double f = 0; f < 1.0 + 1e-9; f += step, ++n) {
        const double dx = 3 + f, dy = -2 + 0.5 * f;
        const ContinuousShift s = refined({}, pair_setup(metric, subpixel), base, fourier_shifted(base, dx, dy));
        const double ex = s.x - dx, ey = s.y - dy;
        e.mean_x += ex, e.mean_y += ey, e.mean_abs_x += std::fabs(ex), e.mean_abs_y += std::fabs(ey);
        e.worst = std::max({e.worst, std::fabs(ex), std::fabs(ey)});
    }
    e.mean_x /= n, e.mean_y /= n, e.mean_abs_x /= n, e.mean_abs_y /= n;
    return e;
}

}  // namespace

TEST_CASE("refine: a real frame moved by fractional shifts in 0.05 px steps is found within 0.02 px, without sign bias") {
    const Errors c = fraction_sweep(Metric::mi, Subpixel::continuous, 0.05);
    const Errors p = fraction_sweep(Metric::mi, Subpixel::parabola, 0.05);
    MESSAGE("continuous: mean error x " << c.mean_x << ", y " << c.mean_y << "; mean |error| x " << c.mean_abs_x << ", y "
                                        << c.mean_abs_y << "; worst " << c.worst);
    MESSAGE("parabola:   mean |error| x " << p.mean_abs_x << ", y " << p.mean_abs_y << "; worst " << p.worst);
    CHECK(c.mean_abs_x <= 0.02);
    CHECK(c.mean_abs_y <= 0.02);
    CHECK(std::fabs(c.mean_x) <= 0.01);
    CHECK(std::fabs(c.mean_y) <= 0.01);
    CHECK(c.worst < 0.05);
    // The parabola is pulled towards whole pixels; the continuous search is not.
    CHECK(c.mean_abs_x < p.mean_abs_x / 2);
    CHECK(c.mean_abs_y < p.mean_abs_y / 2);
}

TEST_CASE("refine: every metric refines the fractional shift") {
    for (Metric metric : {Metric::nmi, Metric::ncc, Metric::cr}) {
        CAPTURE(name_of(metric));
        const Errors e = fraction_sweep(metric, Subpixel::continuous, 0.25);
        CHECK(e.mean_abs_x <= 0.03);
        CHECK(e.mean_abs_y <= 0.03);
    }
}

TEST_CASE("refine: refine_side compares the window's centred part only, where the shift is still found") {
    SearchSetup setup = pair_setup(Metric::mi, Subpixel::continuous);
    const SearchWindow whole = refine_region(setup, setup_corner(setup)).window;
    setup.refine_side = 64;
    const SearchWindow part = refine_region(setup, setup_corner(setup)).window;
    CHECK(part.width == 64);
    CHECK(part.height == 64);
    CHECK(part.x == whole.x + (whole.width - 64) / 2);
    CHECK(part.y == whole.y + (whole.height - 64) / 2);
    // No smaller than the window: the whole window.
    setup.refine_side = whole.width;
    const SearchWindow same = refine_region(setup, setup_corner(setup)).window;
    CHECK((same.x == whole.x && same.y == whole.y && same.width == whole.width && same.height == whole.height));

    setup.refine_side = 64;
    const RawFrame& base = sample_frame(kDrosophila, 6);
    const ContinuousShift s = refined({}, setup, base, fourier_shifted(base, 2.37, -1.61));
    MESSAGE("64 px of a " << whole.width << " px window: " << s.x << ", " << s.y << " for 2.37, -1.61");
    CHECK(std::fabs(s.x - 2.37) < 0.05);
    CHECK(std::fabs(s.y + 1.61) < 0.05);
}

TEST_CASE("refine: scores from fixed-point histograms match textbook formulas; the stencil search finds a known maximum") {
    // A diagonal histogram: MI = log(bins used), NMI = 2, NCC = 1, CR = 1.
    const int bins = 8;
    std::vector<std::uint64_t> h(bins * bins, 0);
    for (int i = 2; i < 6; ++i) h[i * bins + i] = 1000;
    CHECK(parzen_score(h.data(), bins, Metric::mi) == doctest::Approx(std::log(4.0)));
    CHECK(parzen_score(h.data(), bins, Metric::nmi) == doctest::Approx(2.0));
    CHECK(parzen_score(h.data(), bins, Metric::ncc) == doctest::Approx(1.0));
    CHECK(parzen_score(h.data(), bins, Metric::cr) == doctest::Approx(1.0));
    // Independent: MI 0, NCC 0.
    std::fill(h.begin(), h.end(), 7);
    CHECK(std::fabs(parzen_score(h.data(), bins, Metric::mi)) < 1e-12);
    CHECK(std::fabs(parzen_score(h.data(), bins, Metric::ncc)) < 1e-12);

    // A smooth peak at (0.3137, -0.4412) from the integer start (0, 0).
    int calls = 0;
    const ContinuousShift s = refine_continuous(
        [&](const std::vector<ContinuousShift>& at) {
            ++calls;
            std::vector<double> v;
            for (const ContinuousShift& p : at) v.push_back(-std::pow(p.x - 0.3137, 2) - 2 * std::pow(p.y + 0.4412, 2));
            return v;
        },
        {0, 0, 0}, 2);
    CHECK(s.x == doctest::Approx(0.3137).epsilon(1e-4));
    CHECK(s.y == doctest::Approx(-0.4412).epsilon(1e-4));
    CHECK(calls == 3);  // one batch per level

    // A peak that is no quadric (a Gaussian, narrower than the first
    // stencil), in 3D, from the integer start: found to 0.002 px in 81 scores.
    int scored = 0;
    const ContinuousShift g = refine_continuous(
        [&](const std::vector<ContinuousShift>& at) {
            std::vector<double> v;
            for (const ContinuousShift& p : at)
                v.push_back(std::exp(-std::pow(p.x - 0.2, 2) - 2 * std::pow(p.y + 0.3, 2) - std::pow(p.z - 0.45, 2) / 0.5));
            scored += int(at.size());
            return v;
        },
        {0, 0, 0}, 3);
    CHECK(std::fabs(g.x - 0.2) < 0.002);
    CHECK(std::fabs(g.y + 0.3) < 0.002);
    CHECK(std::fabs(g.z - 0.45) < 0.002);
    CHECK(scored == refine_evaluations(3));
    CHECK(refine_evaluations(3) == 81);
    CHECK(refine_evaluations(2) == 27);
}

TEST_CASE("refine: NCC's fixed-point moments give Pearson's correlation; the reference value is the smoothed pixel") {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> value(-20.0f, 300.0f), noise(-30.0f, 30.0f);
    PairMoments m;
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    const int n = 5000;
    for (int i = 0; i < n; ++i) {
        const float a = value(rng), b = 0.5f * a + noise(rng);
        m.add(a, b);
        sa += a, sb += b, saa += double(a) * a, sbb += double(b) * b, sab += double(a) * b;
    }
    std::uint64_t s[kMomentCount];
    for (int k = 0; k < kMomentCount; ++k) s[k] = static_cast<std::uint64_t>(m.m[k]);
    const double cov = sab / n - sa / n * (sb / n);
    const double pearson = cov / std::sqrt((saa / n - sa / n * (sa / n)) * (sbb / n - sb / n * (sb / n)));
    CHECK(pearson > 0.8);
    CHECK(ncc_of_moments(s) == doctest::Approx(pearson).epsilon(1e-6));
    // Anticorrelated and constant.
    PairMoments flipped, flat;
    for (float a : {1.0f, 7.5f, 30.0f, 2.25f}) flipped.add(a, 100.0f - 2 * a), flat.add(a, 3.0f);
    for (int k = 0; k < kMomentCount; ++k) s[k] = static_cast<std::uint64_t>(flipped.m[k]);
    CHECK(ncc_of_moments(s) == doctest::Approx(-1.0));
    for (int k = 0; k < kMomentCount; ++k) s[k] = static_cast<std::uint64_t>(flat.m[k]);
    CHECK(ncc_of_moments(s) == 0.0);

    // The B-spline at a pixel reproduces the smoothed value there.
    const RefineFeatures f = refine_features(sample_frame(kDrosophila, 6), RefineOn::edges, {});
    const RefineImage g{f.coefficients.width, f.coefficients.height, 1};
    for (int y : {3, 200, 509})
        for (int x : {2, 77, 500})
            CHECK(reference_value(f.coefficients.pixels.data(), g, x, y, 0) ==
                  doctest::Approx(f.smooth.at(x, y, 0)).epsilon(1e-4));
}

TEST_CASE("refine: the CPU's statistics are the same words on 1 thread and on 2, 4, 7 and 16 (a window made in bands of rows)") {
    const RawFrame& base = sample_frame(kDrosophila, 6);
    const RawFrame mov = fourier_shifted(base, 2.37, -1.61);
    const RefineFeatures r = refine_features(base, RefineOn::intensity, {}), m = refine_features(mov, RefineOn::intensity, {});
    const SearchSetup setup = pair_setup(Metric::mi, Subpixel::continuous);
    const RefineParams p = refine_params_for(setup, setup_corner(setup), r, m);
    RefineParams moments = p;
    moments.metric = Metric::ncc;
    std::vector<ContinuousShift> shifts;  // one level's stencil
    for (int j = -1; j <= 1; ++j)
        for (int i = -1; i <= 1; ++i) shifts.push_back({2.37 + 0.125 * i, -1.61 + 0.125 * j, 0});
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto one_mi = cpu::refine_statistics(r, m, p, shifts), one_ncc = cpu::refine_statistics(r, m, moments, shifts);
    for (const int many : {2, 4, 7, 16}) {
        CAPTURE(many);
        omp_set_num_threads(many);
        const auto many_mi = cpu::refine_statistics(r, m, p, shifts), many_ncc = cpu::refine_statistics(r, m, moments, shifts);
        CHECK(many_mi == one_mi);
        CHECK(many_ncc == one_ncc);
    }
    omp_set_num_threads(threads);
}

TEST_CASE("refine: the CPU's features (normalised, smoothed, coefficients, level map) are the same words on 1 thread "
          "as on 2, 4 and 7") {
    // Large enough for the parallel passes: a real frame and the real brain.
    for (const RawFrame* image : {&sample_frame(kDrosophila, 6), &sample_volume("sample_data/fish1_pre_anatomy_41x83x166.tif")}) {
        CAPTURE(image->depth);
        const int threads = omp_get_max_threads();
        omp_set_num_threads(1);
        const ImageF normalised = cpu::normalise(*image);
        const RefineFeatures one = refine_features_from(normalised, RefineOn::intensity, 0.65f);
        for (const int many : {2, 4, 7}) {
            CAPTURE(many);
            omp_set_num_threads(many);
            CHECK(cpu::normalise(*image).pixels == normalised.pixels);
            const RefineFeatures f = refine_features_from(normalised, RefineOn::intensity, 0.65f);
            CHECK(f.smooth.pixels == one.smooth.pixels);
            CHECK(f.coefficients.pixels == one.coefficients.pixels);
            CHECK(f.levels.on == one.levels.on);
            CHECK(f.levels.lo == one.levels.lo);
            CHECK(f.levels.scale == one.levels.scale);
            CHECK(std::equal(std::begin(f.levels.knots), std::end(f.levels.knots), std::begin(one.levels.knots)));
        }
        omp_set_num_threads(threads);
    }
}

TEST_CASE("refine: the CPU's Parzen histograms, made a row at a time, are parzen_add over interpolate() pixel by pixel") {
    // The per-pixel definition is the GPU twin's; windows at the frame's
    // corners make the moving samples clamp at every edge.
    const RawFrame& base = sample_frame(kDrosophila, 6);
    const RawFrame mov = fourier_shifted(base, 2.37, -1.61);
    const std::vector<ContinuousShift> shifts{{2.37, -1.61, 0}, {-0.75, 0.3, 0}, {3.1, 2.9, 0}, {0.4, -0.2, 0}, {-1.5, 0.6, 0}};
    for (const RefineOn on : {RefineOn::intensity, RefineOn::edges}) {
        const RefineFeatures r = refine_features(base, on, {}), m = refine_features(mov, on, {});
        const RefineImage g{m.coefficients.width, m.coefficients.height, 1};
        for (const SearchWindow& w : {SearchWindow{156, 156, 0, 200, 200, 1}, SearchWindow{0, 0, 0, 100, 80, 1},
                                      SearchWindow{430, 470, 0, 82, 42, 1}}) {
            CAPTURE(name_of(on));
            CAPTURE(w.x);
            const RefineParams p = refine_params(r, m, w, {}, {4, 4, 0}, Metric::mi);
            const std::vector<std::uint64_t> rows = cpu::refine_statistics(r, m, p, shifts);
            std::vector<std::uint64_t> expected(rows.size(), 0);
            for (std::size_t k = 0; k < shifts.size(); ++k) {
                std::uint64_t* h = expected.data() + k * p.bins * p.bins;
                const ShiftTaps taps = shift_taps(shifts[k]);
                for (int y = w.y; y < w.y + w.height; ++y)
                    for (int x = w.x; x < w.x + w.width; ++x)
                        parzen_add(r.smooth.at(x, y, 0), interpolate(m.coefficients.pixels.data(), g, x, y, 0, taps), p,
                                   p.mov_levels.knots, [&](int bin, std::uint32_t weight) { h[bin] += weight; });
            }
            CHECK(rows == expected);
        }
    }
}

TEST_CASE("refine: in 3D too, the CPU's Parzen histograms and NCC moments, made a row at a time, are interpolate() voxel by voxel") {
    // Windows inside the real brain and at its corners, so the moving
    // samples clamp at every face.
    const RawFrame& base = sample_volume("sample_data/fish1_pre_anatomy_41x83x166.tif");
    const RawFrame mov = fourier_shifted(base, 1.37, -0.61, 0.45);
    const std::vector<ContinuousShift> shifts{{1.37, -0.61, 0.45}, {-0.75, 0.3, -1.2}, {2.9, 1.1, 0.0}, {0.4, -0.2, 2.6}};
    for (const RefineOn on : {RefineOn::intensity, RefineOn::edges}) {
        const RefineFeatures r = refine_features(base, on, {}), m = refine_features(mov, on, {});
        const RefineImage g{m.coefficients.width, m.coefficients.height, m.coefficients.depth};
        for (const SearchWindow& w : {SearchWindow{60, 30, 12, 21, 21, 11}, SearchWindow{0, 0, 0, 17, 9, 6},
                                      SearchWindow{147, 70, 33, 19, 13, 8}}) {
            CAPTURE(name_of(on));
            CAPTURE(w.x);
            const RefineParams p = refine_params(r, m, w, {}, {3, 3, 3}, Metric::mi);
            RefineParams moments = p;
            moments.metric = Metric::ncc;
            std::vector<std::uint64_t> histograms(shifts.size() * p.bins * p.bins, 0), sums;
            for (std::size_t k = 0; k < shifts.size(); ++k) {
                std::uint64_t* h = histograms.data() + k * p.bins * p.bins;
                const ShiftTaps taps = shift_taps(shifts[k]);
                PairMoments pm;
                for (int z = w.z; z < w.z + w.depth; ++z)
                    for (int y = w.y; y < w.y + w.height; ++y)
                        for (int x = w.x; x < w.x + w.width; ++x) {
                            const float b = interpolate(m.coefficients.pixels.data(), g, x, y, z, taps);
                            parzen_add(r.smooth.at(x, y, z), b, p, p.mov_levels.knots,
                                       [&](int bin, std::uint32_t weight) { h[bin] += weight; });
                            pm.add(reference_value(r.coefficients.pixels.data(), g, x, y, z), b);
                        }
                for (int c = 0; c < kMomentCount; ++c) sums.push_back(static_cast<std::uint64_t>(pm.m[c]));
            }
            CHECK(cpu::refine_statistics(r, m, p, shifts) == histograms);
            CHECK(cpu::refine_statistics(r, m, moments, shifts) == sums);
        }
    }
}

TEST_CASE("refine: CUDA Parzen histograms, NCC moments and refined shifts equal the CPU's exactly") {
    if (skip_without_gpu()) return;
    const RawFrame& base = sample_frame(kDrosophila, 6);
    const RawFrame mov = fourier_shifted(base, 2.37, -1.61);
    const RefineFeatures r = refine_features(base, RefineOn::intensity, {}), m = refine_features(mov, RefineOn::intensity, {});
    SearchSetup setup = pair_setup(Metric::mi, Subpixel::continuous);
    const RefineParams p = refine_params_for(setup, setup_corner(setup), r, m);
    std::vector<ContinuousShift> shifts;
    for (double x : {-0.75, 0.0, 2.37, 3.1}) shifts.push_back({x, -1.61 + x / 7, 0});
    const std::vector<std::uint64_t> expected = cpu::refine_statistics(r, m, p, shifts);
    CHECK(cuda::refine_statistics(r, m, p, shifts) == expected);
    // Both ways of adding the histograms (ParzenAdd), whichever "auto" keeps.
    for (const ParzenAdd add : {ParzenAdd::pixels, ParzenAdd::runs}) {
        CAPTURE(name_of(add));
        CHECK(cuda::refine_statistics(r, m, p, shifts, 0, add) == expected);
    }
    // Windows on the frame's edges whose rows are no whole number of the
    // runs' 8 pixels: taps clamped at either side, runs across rows.
    for (const SearchWindow w : {SearchWindow{0, 5, 0, 203, 97, 1}, SearchWindow{309, 411, 0, 203, 101, 1}}) {
        CAPTURE(w.x);
        RefineParams edge = p;
        edge.window = w;
        const std::vector<ContinuousShift> far{{-3.4, 1.2, 0}, {2.6, -4.7, 0}, {0.5, 0.25, 0}};
        const std::vector<std::uint64_t> cpu_words = cpu::refine_statistics(r, m, edge, far);
        for (const ParzenAdd add : {ParzenAdd::pixels, ParzenAdd::runs}) {
            CAPTURE(name_of(add));
            CHECK(cuda::refine_statistics(r, m, edge, far, 0, add) == cpu_words);
        }
    }
    RefineParams moments = p;
    moments.metric = Metric::ncc;
    CHECK(cuda::refine_statistics(r, m, moments, shifts) == cpu::refine_statistics(r, m, moments, shifts));
    for (Metric metric : {Metric::mi, Metric::nmi, Metric::ncc, Metric::cr}) {
        CAPTURE(name_of(metric));
        setup.search.metric = metric;
        setup.refine_metric = metric;
        const ContinuousShift c = refined({Backend::cpu, 0}, setup, base, mov), g = refined({Backend::cuda, 0}, setup, base, mov);
        CHECK(g.x == c.x);
        CHECK(g.y == c.y);
    }
    // The window's centred part only (refine_side).
    setup = pair_setup(Metric::mi, Subpixel::continuous);
    setup.refine_side = 64;
    const ContinuousShift c = refined({Backend::cpu, 0}, setup, base, mov), g = refined({Backend::cuda, 0}, setup, base, mov);
    CHECK(g.x == c.x);
    CHECK(g.y == c.y);
}

namespace {

// refine_features_from's definition, a line at a time: gaussian_sample
// along x, y, (z), then prefilter_line along the same axes.
RefineFeatures features_line_by_line(const ImageF& start, float sigma) {
    RefineFeatures f;
    f.smooth = start;
    const int axes = start.depth > 1 ? 3 : 2;
    const long long steps[3] = {1, start.width, (long long)(start.width) * start.height};
    const int lengths[3] = {start.width, start.height, start.depth};
    auto for_lines = [&](int axis, auto&& line) {
        for (int z = 0; z < (axis == 2 ? 1 : start.depth); ++z)
            for (int y = 0; y < (axis == 1 ? 1 : start.height); ++y)
                for (int x = 0; x < (axis == 0 ? 1 : start.width); ++x)
                    line((z * (long long)(start.height) + y) * start.width + x);
    };
    float k[2 * kGaussianRadius + 1];
    gaussian_taps(k, sigma);
    for (int axis = 0; axis < axes; ++axis) {
        const ImageF before = f.smooth;
        for_lines(axis, [&](long long first) {
            for (int i = 0; i < lengths[axis]; ++i)
                f.smooth.pixels[first + i * steps[axis]] =
                    gaussian_sample(&before.pixels[first], steps[axis], lengths[axis], i, k);
        });
    }
    f.coefficients = f.smooth;
    for (int axis = 0; axis < axes; ++axis)
        for_lines(axis, [&](long long first) {
            std::vector<double> c(lengths[axis]);
            prefilter_line(&f.coefficients.pixels[first], &f.coefficients.pixels[first], steps[axis], lengths[axis],
                           c.data(), 1, spline_pole(), spline_horizon());
        });
    return f;
}

}  // namespace

TEST_CASE("refine: the CPU's smoothed features and B-spline coefficients are gaussian_sample and prefilter_line, line by line") {
    // Rows padded and filtered side by side, rows prefiltered 16 at a time
    // through a transposed copy, columns and slices in blocks: the same
    // words as the definition, on a real frame's crops of awkward sizes
    // (narrower than the Gaussian, one row, odd), and a real volume's.
    const RawFrame& frame = sample_frame(kDrosophila, 6);
    const RawFrame volume = crop_volume(sample_volume("sample_data/fish1_pre_anatomy_41x83x166.tif"), 20, 10, 5, 37, 23, 9);
    std::vector<RawFrame> shapes = {crop(frame, 100, 120, 145, 119), crop(frame, 0, 0, 3, 40), crop(frame, 300, 7, 70, 1),
                                    crop(frame, 11, 200, 130, 67), volume};
    const int before = omp_get_max_threads();
    for (const RawFrame& f : shapes)
        for (const float sigma : {kRefineSigma, 0.65f}) {
            CAPTURE(f.width);
            CAPTURE(f.height);
            CAPTURE(f.depth);
            CAPTURE(sigma);
            const ImageF start = cpu::normalise(f);
            const RefineFeatures expected = features_line_by_line(start, sigma);
            for (const int threads : {1, 3}) {
                omp_set_num_threads(threads);
                const RefineFeatures made = refine_features_from(start, RefineOn::edges, sigma);
                CHECK(made.smooth.pixels == expected.smooth.pixels);
                CHECK(made.coefficients.pixels == expected.coefficients.pixels);
            }
        }
    omp_set_num_threads(before);
}

TEST_CASE("refine: a searcher prefilters a slot's coefficients when it is first refined as the moving view, to the same shifts") {
    // A searcher makes a slot's B-spline coefficients only once the slot is
    // refined as the moving view (or read through them: NCC's reference):
    // each slot here is the reference first and the moving view after.
    // Every shift must be the one eager features (refine_features) give.
    const RawFrame& base = sample_frame(kDrosophila, 6);
    const RawFrame mov = fourier_shifted(base, 3.3, -1.7);
    std::vector<Device> devices = {Device{}};
    if (cuda::device_count() > 0) devices.push_back(Device{Backend::cuda, 0});  // else the CPU's alone
    for (const Device& device : devices)
        for (const Metric metric : {Metric::mi, Metric::ncc}) {
            CAPTURE(name_of(device.backend));
            CAPTURE(name_of(metric));
            const SearchSetup setup = pair_setup(metric, Subpixel::continuous);
            const RefineFeatures r = refine_features(base, setup.refine_on, setup.preprocess, setup.refine_sigma),
                                 m = refine_features(mov, setup.refine_on, setup.preprocess, setup.refine_sigma);
            auto eager = [&](const RefineFeatures& a, const RefineFeatures& b, const MiPeak& peak) {
                return refine_search_peak(setup, setup_corner(setup), a, b, peak,
                                          [&](const RefineParams& p, const std::vector<ContinuousShift>& shifts) {
                                              return cpu::refine_statistics(a, b, p, shifts);
                                          });
            };
            auto searcher = make_pair_searcher(device, setup);
            searcher->load(0, base);
            searcher->load(1, mov);
            const MiPeak forth = searcher->search(0, 1);
            const ContinuousShift there = searcher->refine(0, 1, forth), expected_there = eager(r, m, forth);
            CHECK(there.x == expected_there.x);
            CHECK(there.y == expected_there.y);
            CHECK(std::fabs(there.x - 3.3) < 0.05);
            const MiPeak back = searcher->search(1, 0);
            const ContinuousShift again = searcher->refine(1, 0, back), expected_again = eager(m, r, back);
            CHECK(again.x == expected_again.x);
            CHECK(again.y == expected_again.y);
        }
}

TEST_CASE("refine: CUDA features (smoothed frame, B-spline coefficients, level map) equal the CPU's bit for bit") {
    if (skip_without_gpu()) return;
    // A real frame (2D, u8) and a real volume (3D, u16), on intensities and edges.
    const RawFrame& frame = sample_frame(kDrosophila, 6);
    const RawFrame volume = crop_volume(sample_volume("sample_data/fish1_pre_anatomy_41x83x166.tif"), 20, 10, 5, 90, 60, 30);
    // Frames of the real frame's rows laid end to end (from its row 200, 48
    // of them over and over), whose long rows take the GPU's other
    // prefilters (on an H100 or H200, 227 KB of shared memory a block):
    // 3000 px, the recursion's doubles in global memory; 65536 px, not even
    // one row's samples staged, one thread a row.
    auto joined_rows = [&](int width, int rows) {
        std::vector<double> v;
        for (long long i = 0; i < (long long)(width) * rows; ++i)
            v.push_back(frame.bytes[std::size_t(i / 512 % 48 + 200) * 512 + std::size_t(i % 512)]);
        return frame_of(PixelType::u8, width, rows, v);
    };
    const RawFrame wide_rows = joined_rows(3000, 24), long_rows = joined_rows(65536, 2);
    const PreprocessParams search{1, true, 20.0f, 64};
    for (const RawFrame* f : {&frame, &volume, &wide_rows, &long_rows})
        for (const RefineOn on : {RefineOn::intensity, RefineOn::edges})
            for (const float sigma : {kRefineSigma, 0.65f}) {  // 0.65: what refine_sigma = "auto" gives clean frames
                CAPTURE(f->width);
                CAPTURE(f->depth);
                CAPTURE(name_of(on));
                CAPTURE(sigma);
                const RefineFeatures c = refine_features(*f, on, search, sigma),
                                     g = cuda::refine_features(*f, on, search, sigma);
                CHECK(g.smooth.pixels == c.smooth.pixels);
                CHECK(g.coefficients.pixels == c.coefficients.pixels);
                CHECK(g.levels.on == c.levels.on);
                CHECK(g.levels.lo == c.levels.lo);
                CHECK(g.levels.scale == c.levels.scale);
                CHECK(std::memcmp(g.levels.knots, c.levels.knots, sizeof c.levels.knots) == 0);
            }
}
