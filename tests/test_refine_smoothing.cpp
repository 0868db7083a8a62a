// refine_sigma = "auto" (src/alignment/noise_level.hpp,
// pipelines/stages/refine_smoothing.hpp): the noise measured against the
// contrast, the smoothing it gives, and the plan that carries it.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "../pipelines/plan/stack_plan.hpp"
#include "../pipelines/stages/refine_smoothing.hpp"
#include "../src/alignment/noise_level.hpp"
#include "../src/core/error.hpp"
#include "../src/config/config_reader.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

// Smooth structure (a plane and a slow wave: the mask cancels planes and
// nearly cancels the wave) with Gaussian noise of `noise`; its values' sd in `sd`.
RawFrame smooth_frame(double noise, double& sd, std::uint32_t seed = 1) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> gauss(0.0, noise);
    const int w = 200, h = 180;
    std::vector<double> v(std::size_t(w) * h);
    double s = 0, s2 = 0;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double a = 2.0 * x + 1.5 * y + 300.0 * std::sin(x / 25.0) * std::cos(y / 31.0) + gauss(rng);
            v[std::size_t(y) * w + x] = a, s += a, s2 += a * a;
        }
    const double n = double(v.size());
    sd = std::sqrt(s2 / n - (s / n) * (s / n));
    return frame_of(PixelType::f32, w, h, v);
}

// The sample embryo frame as photon counts: `photons` at its mean.
RawFrame photon_frame(double photons) {
    const RawFrame& f = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 6);
    const ImageF v = f.to_float();
    double mean = 0;
    for (float a : v.pixels) mean += a;
    mean /= double(v.pixels.size());
    std::mt19937 rng(7);
    std::vector<double> out(v.pixels.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = std::poisson_distribution<int>(std::max(0.0, double(v.pixels[i])) / mean * photons)(rng);
    return frame_of(PixelType::f32, f.width, f.height, out);
}

}  // namespace

TEST_CASE("noise: Gaussian noise of a known size on smooth structure reads as that size against the contrast") {
    for (const double noise : {5.0, 20.0, 60.0}) {
        CAPTURE(noise);
        double sd = 0;
        const RawFrame f = smooth_frame(noise, sd);
        CHECK(noise_to_contrast(f) == doctest::Approx(noise / sd).epsilon(0.1));
    }
    double sd = 0;
    CHECK(noise_to_contrast(smooth_frame(0.0, sd)) < 0.01);
    CHECK(noise_to_contrast(frame_of(PixelType::u8, 20, 20, std::vector<double>(400, 7.0))) == 0.0);  // no contrast
}

TEST_CASE("noise: flat (saturated) areas do not count as noiseless") {
    double sd = 0;
    RawFrame f = smooth_frame(20.0, sd);
    const double whole = noise_to_contrast(f) * sd;  // the noise itself
    // The left half clipped to one value, as a saturated detector gives:
    // without the flat pixels left out, the median response would be 0.
    float* p = reinterpret_cast<float*>(f.bytes.data());
    for (int y = 0; y < f.height; ++y)
        for (int x = 0; x < f.width / 2; ++x) p[std::size_t(y) * f.width + x] = 0.0f;
    const ImageF v = f.to_float();
    double s = 0, s2 = 0;
    for (float a : v.pixels) s += a, s2 += double(a) * a;
    const double n = double(v.pixels.size()), clipped_sd = std::sqrt(s2 / n - (s / n) * (s / n));
    CHECK(noise_to_contrast(f) * clipped_sd == doctest::Approx(whole).epsilon(0.15));
}

TEST_CASE("noise: a real frame reads noisier as its photons get fewer, and is smoothed more") {
    const double clean = noise_to_contrast(sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 6));
    const double many = noise_to_contrast(photon_frame(300)), some = noise_to_contrast(photon_frame(30)),
                 few = noise_to_contrast(photon_frame(10));
    MESSAGE("noise to contrast: frame " << clean << ", 300 photons " << many << ", 30 " << some << ", 10 " << few);
    CHECK(clean < many);
    CHECK(many < some);
    CHECK(some < few);
    // What the compare cases measured best (docs/benchmarks.md): 0.65 px on
    // the clean frame and at 300 photons, 1 px at 10.
    CHECK(smoothing_for_noise(clean) == doctest::Approx(0.65));
    CHECK(smoothing_for_noise(many) == doctest::Approx(0.65));
    CHECK(smoothing_for_noise(few) >= 0.95f);
}

TEST_CASE("noise: the smoothing rises with the noise from 0.65 to 1 px, and a series takes its least noisy frame") {
    CHECK(smoothing_for_noise(0.0) == doctest::Approx(0.65));
    CHECK(smoothing_for_noise(0.12) == doctest::Approx(0.65));
    CHECK(smoothing_for_noise(0.22) == doctest::Approx(0.825));
    CHECK(smoothing_for_noise(0.32) == doctest::Approx(kRefineSigma));
    CHECK(smoothing_for_noise(5.0) == doctest::Approx(kRefineSigma));
    for (double r = 0; r < 0.5; r += 0.01) CHECK(smoothing_for_noise(r) <= smoothing_for_noise(r + 0.01));
    CHECK(series_noise({0.38, 0.03, 0.39}) == 0.03);  // bands reordered in two frames read as noise; the third is true
    CHECK(series_noise({}) == 1.0);                   // nothing measured: the most smoothing
}

TEST_CASE("refine_sigma: \"auto\" is measured for shifts, 1 px for rigid motion, a number is kept") {
    const std::string dir = temp_dir("refine_sigma_plan");
    auto plan_with = [&](const std::string& search) {
        std::string cfg = sample_config("sample_timelapse", dir + "/out");
        cfg.replace(cfg.find("[search]\n"), 9, "[search]\n" + search);
        write_text(dir + "/job.toml", cfg);
        RunOptions opt;
        opt.backend = BackendRequest::cpu;
        return plan_stack(load_config(dir + "/job.toml"), opt);
    };
    const StackPlan shifts = plan_with("");
    CHECK(shifts.refine_sigma_auto);
    FrameReader frames(shifts.files, std::size_t(64) << 20);
    const StackPlan measured = resolve_refine_smoothing(shifts, frames, Verbosity::quiet);
    CHECK(measured.refine_noise > 0);
    CHECK(measured.setup.refine_sigma == doctest::Approx(smoothing_for_noise(measured.refine_noise)));
    CHECK(measured.setup.refine_sigma == doctest::Approx(0.65));  // the sample's frames are clean

    const StackPlan rigid = plan_with("transform = \"rigid\"\n");
    CHECK_FALSE(rigid.refine_sigma_auto);
    CHECK(rigid.setup.refine_sigma == kRefineSigma);
    CHECK(resolve_refine_smoothing(rigid, frames, Verbosity::quiet).setup.refine_sigma == kRefineSigma);

    const StackPlan given = plan_with("refine_sigma = 0.8\n");
    CHECK_FALSE(given.refine_sigma_auto);
    CHECK(given.setup.refine_sigma == doctest::Approx(0.8));
    CHECK(given.refine_sigma_why == "config");

    CHECK_THROWS_WITH_AS(plan_with("refine_sigma = 2.0\n"), doctest::Contains("refine_sigma"), ConfigError);
    std::string parabola = sample_config("sample_timelapse", dir + "/out");
    parabola.replace(parabola.find("subpixel = true"), 15, "subpixel = \"parabola\"\nrefine_sigma = 0.8");
    write_text(dir + "/parabola.toml", parabola);
    CHECK_THROWS_WITH_AS(plan_stack(load_config(dir + "/parabola.toml"), RunOptions{}),
                         doctest::Contains("only used with subpixel = true"), ConfigError);
}
