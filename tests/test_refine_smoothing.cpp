// refine_sigma = "auto" (src/alignment/noise_level.hpp,
// pipelines/stages/refine_smoothing.hpp): the noise measured against the
// contrast, the smoothing it gives, and the plan that carries it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "../pipelines/plan/stack_plan.hpp"
#include "../pipelines/stack.hpp"
#include "../pipelines/stages/refine_smoothing.hpp"
#include "../pipelines/stages/search_pairs.hpp"
#include "../src/alignment/noise_level.hpp"
#include "../src/core/error.hpp"
#include "../src/config/config_reader.hpp"
#include "../src/io/tiff_io.hpp"
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

// The sample embryo's frame 6 through a camera of three times the pixel
// pitch (3x3 block means of its central 384^2), the content moved by
// (tx, ty) thirds of a pixel: offsets on no decimal grid, no interpolation
// model (bench/compare --lattice 3 makes its cases so).
RawFrame binned_thirds(int tx, int ty) {
    return block_mean(crop(sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 6), 64 - tx, 64 - ty, 384, 384), 3);
}

// `f`'s values cut into 6 bands of equal pixel counts, the bands put in
// another order, each keeping its inner gradation (as between two stains:
// bench/compare's "bands shuffled").
RawFrame shuffled_bands(const RawFrame& f) {
    const int order[6] = {3, 0, 5, 1, 4, 2};
    const ImageF v = f.to_float();
    std::vector<float> sorted(v.pixels.begin(), v.pixels.end());
    std::sort(sorted.begin(), sorted.end());
    double edges[7];
    for (int b = 0; b <= 6; ++b) edges[b] = sorted[std::min(sorted.size() - 1, sorted.size() * b / 6)];
    std::vector<double> out(v.pixels.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        int b = 0;
        while (b < 5 && v.pixels[i] >= edges[b + 1]) ++b;
        const double inside = std::clamp((v.pixels[i] - edges[b]) / std::max(edges[b + 1] - edges[b], 1e-9), 0.0, 1.0);
        out[i] = (order[b] + inside) / 6 * 1000;
    }
    return frame_of(PixelType::f32, f.width, f.height, out);
}

struct ThirdsRun {
    nlohmann::json plan;  // run.json's "plan"
    double rms = 0;       // px, against the known offsets
    std::vector<double> offsets;  // each frame's dx and dy, as solved
};

// Frame k's contrast as a case has it.
using Contrast = RawFrame (*)(const RawFrame& f, int k);
RawFrame every_other_shuffled(const RawFrame& f, int k) { return k % 2 ? shuffled_bands(f) : f; }
// A gain of 0.5-1.6 and a gamma of 0.6-1.6 drawn per frame (bench/compare's "gain and gamma").
RawFrame gain_gamma(const RawFrame& f, int k) {
    std::mt19937 rng(100 + k);
    const double gain = std::uniform_real_distribution<double>(0.5, 1.6)(rng);
    const double gamma = std::uniform_real_distribution<double>(0.6, 1.6)(rng);
    const ImageF v = f.to_float();
    const double hi = *std::max_element(v.pixels.begin(), v.pixels.end());
    std::vector<double> out(v.pixels.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = gain * hi * std::pow(std::max(0.0, v.pixels[i] / hi), gamma);
    return frame_of(PixelType::f32, f.width, f.height, out);
}

// 13 frames along a random walk of thirds of a pixel, each through
// `contrast`, aligned on the CPU with `search` added.
ThirdsRun align_thirds(const std::string& name, Contrast contrast, const std::string& search) {
    std::mt19937 rng(2026);
    std::vector<std::pair<int, int>> walk = {{0, 0}};
    while (walk.size() < 13) {
        const int x = walk.back().first + int(rng() % 19) - 9, y = walk.back().second + int(rng() % 19) - 9;
        if (std::abs(x) <= 48 && std::abs(y) <= 48) walk.push_back({x, y});
    }
    std::vector<RawFrame> frames;
    for (std::size_t k = 0; k < walk.size(); ++k) {
        frames.push_back(contrast(binned_thirds(walk[k].first, walk[k].second), int(k)));
    }
    const std::string dir = temp_dir(name);
    write_tiff_stack(dir + "/s.tif", frames);
    write_text(dir + "/job.toml", "[input]\nstack = \"s.tif\"\n[preprocess]\nthreshold = 10.0\n[search]\nmax_shift = 8\n" +
                                      search + "[alignment]\nreference = 0\n[output]\ndir = \"out\"\nreport = false\n"
                                      "aligned = false\n[device]\nbackend = \"cpu\"\n");
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    const StackResult r = run_stack(load_config(dir + "/job.toml"), quiet);
    ThirdsRun out;
    out.plan = nlohmann::json::parse(read_text(dir + "/out/run.json"))["plan"];
    // Frame k shows the content moved by walk_k / 3 (frame 0 by nothing): its offset.
    double sum = 0;
    for (std::size_t k = 0; k < walk.size(); ++k) {
        sum += std::pow(r.frames[k].offset.dx - walk[k].first / 3.0, 2) + std::pow(r.frames[k].offset.dy - walk[k].second / 3.0, 2);
        out.offsets.insert(out.offsets.end(), {r.frames[k].offset.dx, r.frames[k].offset.dy});
    }
    out.rms = std::sqrt(sum / double(walk.size()));
    return out;
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

TEST_CASE("refine_sigma: \"auto\" is measured for shifts, 1 px for rigid motion, a number is kept; refine_side is kept, and refused without the continuous refinement") {
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
    StageTimes times;
    const StackPlan measured = resolve_refine_smoothing(shifts, frames, times, Verbosity::quiet).plan;
    CHECK(measured.refine_noise > 0);
    CHECK(smoothing_for_noise(measured.refine_noise) == doctest::Approx(0.65));  // the sample's frames are clean
    // so the trial weighed 0.65 px against 1 px, and its verdict is the plan's.
    REQUIRE(measured.refine_trial);
    CHECK(measured.refine_trial->less == doctest::Approx(0.65));
    CHECK(measured.refine_trial->closure_less > 0);
    CHECK(measured.refine_trial->closure_more > 0);
    CHECK(measured.setup.refine_sigma == (more_smoothing_wins(measured.refine_trial->closure_less,
                                                              measured.refine_trial->closure_more)
                                              ? kRefineSigma
                                              : measured.refine_trial->less));

    const StackPlan rigid = plan_with("transform = \"rigid\"\n");
    CHECK_FALSE(rigid.refine_sigma_auto);
    CHECK(rigid.setup.refine_sigma == kRefineSigma);
    CHECK(resolve_refine_smoothing(rigid, frames, times, Verbosity::quiet).plan.setup.refine_sigma == kRefineSigma);

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
    // refine_side likewise: the continuous refinement's, kept in the plan.
    CHECK(plan_with("refine_side = 128\n").setup.refine_side == 128);
    CHECK(plan_with("").setup.refine_side == 0);
    parabola.replace(parabola.find("refine_sigma = 0.8"), 18, "refine_side = 128");
    write_text(dir + "/parabola_side.toml", parabola);
    CHECK_THROWS_WITH_AS(plan_stack(load_config(dir + "/parabola_side.toml"), RunOptions{}),
                         doctest::Contains("[search] refine_side: only used with subpixel = true"), ConfigError);
}

TEST_CASE("refine_sigma: \"auto\" weighs 1 px where the pairs agree clearly better with it") {
    CHECK_FALSE(more_smoothing_wins(0.010, 0.008));  // a little tighter is not enough: 7 triplets are noisy
    CHECK(more_smoothing_wins(0.010, 0.006));
    CHECK_FALSE(more_smoothing_wins(0.0, 0.0));
    CHECK_FALSE(more_smoothing_wins(std::nan(""), 0.001));  // nothing measured: the noise's choice stands
    CHECK_FALSE(more_smoothing_wins(0.010, std::nan("")));

    // Real frames on 128^2 with offsets in thirds of a pixel, every other
    // frame's intensity bands shuffled: the noise reads low, but 1 px is
    // the more precise here (bench/compare --lattice 3, ten seeds: 0.036
    // against 0.096 px RMS).
    const ThirdsRun shuffled = align_thirds("sigma_trial_bands", every_other_shuffled, "");
    const ThirdsRun shuffled_065 = align_thirds("sigma_trial_bands_065", every_other_shuffled, "refine_sigma = 0.65\n");
    MESSAGE("bands shuffled: auto " << shuffled.rms << " px (plan " << shuffled.plan.dump() << "), 0.65 px "
                                    << shuffled_065.rms << " px");
    REQUIRE(shuffled.plan.contains("refine_sigma_trial"));
    const nlohmann::json& trial = shuffled.plan["refine_sigma_trial"];
    CHECK(trial["views"] == 9);
    CHECK(trial["sigmas"][0].get<double>() == doctest::Approx(0.65));
    CHECK_FALSE(trial["larger_smoothing_stopped"].get<bool>());  // 1 px won: every triplet was needed
    CHECK(trial["larger_smoothing_triplets"] == 7);
    CHECK(shuffled.plan["refine_sigma"].get<double>() == doctest::Approx(1.0));
    CHECK(shuffled.rms < 0.6 * shuffled_065.rms);
    // The job takes the trial's pairs at 1 px as they are, and that trial
    // refined the peaks found at 0.65 px: the answer is still, to the last
    // bit, what a job told 1 px finds by searching every pair itself.
    CHECK(shuffled.offsets == align_thirds("sigma_trial_bands_1", every_other_shuffled, "refine_sigma = 1.0\n").offsets);

    // A gamma per frame: there smoothing costs precision (0.012 against
    // 0.042 px at 1 px over those ten seeds), and the trial keeps 0.65 px.
    const ThirdsRun gamma = align_thirds("sigma_trial_gamma", gain_gamma, "");
    const ThirdsRun gamma_1 = align_thirds("sigma_trial_gamma_1", gain_gamma, "refine_sigma = 1.0\n");
    MESSAGE("gain and gamma: auto " << gamma.rms << " px (plan " << gamma.plan.dump() << "), 1 px " << gamma_1.rms << " px");
    REQUIRE(gamma.plan.contains("refine_sigma_trial"));
    CHECK(gamma.plan["refine_sigma"].get<double>() == doctest::Approx(0.65));
    CHECK(gamma.rms < gamma_1.rms);
    // The trial at 1 px stopped once its first triplets could no longer
    // close 1.6x tighter than 0.65 px's, whatever the rest would give...
    const nlohmann::json& stopped = gamma.plan["refine_sigma_trial"];
    CHECK(stopped["larger_smoothing_stopped"].get<bool>());
    CHECK(stopped["larger_smoothing_triplets"].get<int>() < 7);
    CHECK(stopped["triplet_disagreement_rms"][1].get<double>() * 1.6 >=
          stopped["triplet_disagreement_rms"][0].get<double>());
    // ...and the job takes the trial's pairs at 0.65 px: the same bits as searching them again.
    CHECK(gamma.offsets == align_thirds("sigma_trial_gamma_065", gain_gamma, "refine_sigma = 0.65\n").offsets);
}

TEST_CASE("refine_sigma: the 1 px trial leaves unrefined only the skips that cannot weigh a triplet, and a job handed "
          "them refines them as a search of its own would") {
    // The real time-lapse's 9 views around its reference, as the trial
    // takes them: 5 of their 7 skips have weak peaks.
    const std::string dir = temp_dir("refine_sigma_triplets_only");
    write_text(dir + "/job.toml", sample_config("sample_timelapse", dir + "/out"));
    RunOptions opt;
    opt.backend = BackendRequest::cpu;
    StackPlan plan = plan_stack(load_config(dir + "/job.toml"), opt);
    const int first = plan.kept_reference() - 4;
    plan.kept.assign(plan.kept.begin() + first, plan.kept.begin() + first + 9);
    plan.solve = OffsetSolve::least_squares;
    FrameReader frames(plan.files, std::size_t(64) << 20);
    StageTimes times;
    plan.setup.refine_sigma = 0.65f;
    const PairSearch less = search_pairs(plan, frames, times, Verbosity::quiet);
    plan.setup.refine_sigma = 1.0f;
    const PairSearch weighed = search_pairs(plan, frames, times, Verbosity::quiet, {&less, false, true});
    const PairSearch whole = search_pairs(plan, frames, times, Verbosity::quiet, {&less, false});
    check_same_pair_results(weighed.pairs, whole.pairs);
    REQUIRE(weighed.skips.size() == whole.skips.size());
    int unrefined = 0;
    for (std::size_t k = 0; k < weighed.skips.size(); ++k) {
        CAPTURE(k);
        const PairResult &w = weighed.skips[k], &c = whole.skips[k];
        CHECK(w.refined == skip_weighs_triplet(plan, c));
        if (w.refined) {
            check_same_pair_result(w, c);
            continue;
        }
        ++unrefined;
        CHECK(w.peak.dx == c.peak.dx);
        CHECK(w.peak.dy == c.peak.dy);
        CHECK(w.peak.sharpness() == c.peak.sharpness());
        CHECK(w.off_prediction == c.off_prediction);
        CHECK(w.measured.dx == w.peak.centre.x + w.peak.dx);  // its integer peak
    }
    MESSAGE(unrefined << " of " << weighed.skips.size() << " skips left unrefined");
    CHECK(unrefined > 0);
    CHECK(unrefined < int(weighed.skips.size()));
    // Where 1 px wins the job is handed this trial whole: it refines the
    // skips left unrefined, and every pair and skip is, to the last bit,
    // what a search at 1 px of its own finds.
    const PairSearch job = search_pairs(plan, frames, times, Verbosity::quiet, {&weighed, true});
    const PairSearch searched = search_pairs(plan, frames, times, Verbosity::quiet);
    check_same_pair_results(job.pairs, searched.pairs);
    check_same_pair_results(job.skips, searched.skips);
}
