// Pair searchers: several at once ([device] searchers), the pairs split into
// chains outward from the reference, skips on the searcher that has both
// neighbours or after (with stretching: on the searchers the two chains leave
// free, waiting for both; without, searchers whose chains are done taking the
// others' tails: test_pair_tasks.cpp), give the one-searcher shifts bit for
// bit, with and without cosine stretching, for shifts and for rigid motion,
// on each backend; and a searcher's load options change no answer.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "../kernels/cuda_api.hpp"
#include "../kernels/pair_searcher.hpp"
#include "../pipelines/stack.hpp"
#include "../pipelines/stages/search_pairs.hpp"
#include "../src/config/config.hpp"
#include "../src/config/config_reader.hpp"
#include "../src/core/error.hpp"
#include "../src/core/workers.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

// The sample tilt series' config (91 real HAADF views, least squares) with
// `alignment` replacing its cosine_stretch line, on `backend`, `searchers` at once.
std::string tilt_config(const std::string& alignment, const std::string& extra_search, const std::string& backend,
                        int searchers) {
    std::string cfg = sample_config("sample_tilt_series", "out");
    auto replace = [&](const std::string& from, const std::string& to) {
        const std::size_t at = cfg.find(from);
        REQUIRE(at != std::string::npos);
        cfg.replace(at, from.size(), to);
    };
    replace("cosine_stretch = false", alignment);
    if (alignment.find("projection_iterations") != std::string::npos)
        replace("projection_matching = \"auto\"", "projection_matching = true");
    replace("[search]\n", "[search]\n" + extra_search);
    replace("backend = \"auto\"", "backend = \"" + backend + "\"\nsearchers = " + std::to_string(searchers));
    replace("report = true", "report = false");
    replace("projection_iterations = 4", "");
    replace("aligned = true", "aligned = false");
    return cfg;
}

// The shifts.csv of the job `cfg` (its output dir `dir`/out), run quietly;
// its run.json in `record`.
std::string run_quietly(const std::string& dir, const std::string& cfg, nlohmann::json& record) {
    write_text(dir + "/job.toml", cfg);
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    run_stack(load_config(dir + "/job.toml"), quiet);
    record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    return read_text(dir + "/out/shifts.csv");
}

std::string shifts_of(const std::string& dir, const std::string& cfg, int searchers) {
    nlohmann::json j;
    const std::string shifts = run_quietly(dir, cfg, j);
    CHECK(j["plan"]["searchers"].get<int>() == searchers);
    // Each searcher's time (run.json "searchers"): its parts within its wall
    // time, its tasks adding up to every pair and skip, the plan's count at most.
    CHECK(j["searchers"].size() >= 1);
    CHECK(j["searchers"].size() <= std::size_t(searchers));
    int tasks = 0;
    for (const auto& s : j["searchers"]) {
        const auto& t = s["seconds"];
        const double parts = t["reading"].get<double>() + t["loading"].get<double>() + t["search"].get<double>() +
                             t["refine"].get<double>() + t["waiting"].get<double>();
        CHECK(parts <= t["wall"].get<double>() + 1e-6);
        CHECK(t["loading"].get<double>() >= 0);
        tasks += s["pairs"].get<int>();
    }
    CHECK(tasks == int(j["pairs"].size()) + int(j["skip_pairs"].size()));
    return shifts;
}

}  // namespace

TEST_CASE("searchers: pairs split between several searchers give one searcher's shifts.csv, byte for byte") {
    struct Case {
        const char* name;
        std::string alignment, search;
        bool slab_range = false;  // the views within +-80 degrees only (sample_tilt_within_slab_range)
    };
    const Case cases[] = {
        {"unstretched", "cosine_stretch = false", ""},
        // The higher-tilt view is stretched about its placed neighbour: two
        // chains from the reference; the skip across it comes after both. A
        // reference at -50 degrees, so that stretch is far from 1.
        {"stretched", "cosine_stretch = true\nreference = 20", ""},
        {"stretch auto", "cosine_stretch = \"auto\"\nreference = 15", "", true},
        {"rigid", "cosine_stretch = false", "transform = \"rigid\"\nangle_range = 4\nangle_step = 2\n"},
        // Views matched to reprojections, each on whichever searcher is free.
        {"projection matching", "cosine_stretch = false\nprojection_iterations = 2", ""},
    };
    std::vector<std::string> backends = {"cpu"};
    if (!skip_without_gpu()) backends.push_back("cuda");
    for (const std::string& backend : backends)
        for (const Case& c : cases) {
            const std::string job = c.name;
            CAPTURE(backend);
            CAPTURE(job);
            const std::string dir = temp_dir(std::string("searchers_") + backend + "_" + std::to_string(&c - cases));
            auto config = [&](int searchers) {
                const std::string cfg = tilt_config(c.alignment, c.search, backend, searchers);
                return c.slab_range ? sample_tilt_within_slab_range(cfg, dir) : cfg;
            };
            const std::string one = shifts_of(dir, config(1), 1);
            CHECK(one.size() > 1000);
            // Stretched: 3 searchers are two chains and one skip searcher
            // for both, 4 two chains and a skip searcher each.
            for (int searchers : {3, 4}) {
                if (searchers == 4 && c.alignment.find("stretch = false") != std::string::npos) continue;
                CAPTURE(searchers);
                CHECK(shifts_of(dir, config(searchers), searchers) == one);
            }
        }
}

// search_pairs' stop_when (the smoothing trial's second search ends so once
// it cannot win): no searcher starts another pair or skip, the skip
// searchers waiting on chains give up (stretched), and what the rule was
// shown done is what the whole search finds, bit for bit.
TEST_CASE("searchers: a search told to stop stops, and the pairs it was shown done are the whole search's") {
    struct Case {
        const char* name;
        std::string alignment;
        int searchers;
    };
    // Stretched, 4 searchers: two chains from the reference and a skip searcher waiting on each.
    const Case cases[] = {{"one searcher", "cosine_stretch = false", 1},
                          {"three searchers", "cosine_stretch = false", 3},
                          {"stretched", "cosine_stretch = true\nreference = 20", 4}};
    for (const Case& c : cases) {
        CAPTURE(c.name);
        const std::string dir = temp_dir(std::string("searchers_stop_") + std::to_string(&c - cases));
        write_text(dir + "/job.toml", tilt_config(c.alignment, "", "cpu", c.searchers));
        const StackPlan plan = plan_stack(load_config(dir + "/job.toml"), RunOptions{});
        REQUIRE(plan.searchers == c.searchers);
        FrameReader frames(plan.files, std::size_t(64) << 20);
        StageTimes times;
        const PairSearch whole = search_pairs(plan, frames, times, Verbosity::quiet);
        CHECK_FALSE(whole.stopped);
        std::vector<bool> shown_pairs, shown_skips;
        int asked = 0;
        const PairSearch part = search_pairs(plan, frames, times, Verbosity::quiet, {},
                                             [&](const PairSearch&, const std::vector<bool>& pairs, const std::vector<bool>& skips) {
                                                 ++asked;
                                                 if (std::count(pairs.begin(), pairs.end(), true) < 6) return false;
                                                 shown_pairs = pairs, shown_skips = skips;
                                                 return true;
                                             });
        CHECK(part.stopped);
        REQUIRE(shown_pairs.size() == whole.pairs.size());
        int done = 0;
        for (const SearcherTimes& t : part.searchers) done += t.pairs;
        CHECK(asked >= 6);
        CHECK(asked <= done);  // a pair in flight when it stopped is finished, not asked about
        CHECK(done < int(whole.pairs.size() + whole.skips.size()) / 2);
        for (std::size_t k = 0; k < shown_pairs.size(); ++k)
            if (shown_pairs[k]) check_same_pair_result(part.pairs[k], whole.pairs[k]);
        for (std::size_t k = 0; k < shown_skips.size(); ++k)
            if (shown_skips[k]) check_same_pair_result(part.skips[k], whole.skips[k]);
    }
}

// On the CPU, "auto" gives each searcher about a thread per 16384 window
// pixels (a power of two, at least 2), at most a searcher per 4 neighbour
// pairs; a stretched series keeps a quarter of the threads, at most 4.
TEST_CASE("searchers: \"auto\" on the CPU sizes each searcher's threads to its window") {
    const std::string dir = temp_dir("searchers_auto_cpu");
    // `stretched`: the sample's cosine_stretch = false made true.
    auto plan_of = [&](const std::string& sample, bool stretched, int threads) {
        std::string cfg = sample_config(sample, "out");
        auto replace = [&](const std::string& from, const std::string& to) {
            const std::size_t at = cfg.find(from);
            REQUIRE(at != std::string::npos);
            cfg.replace(at, from.size(), to);
        };
        replace("backend = \"auto\"", "backend = \"cpu\"");
        if (stretched) replace("cosine_stretch = false", "cosine_stretch = true");
        write_text(dir + "/job.toml", cfg);
        omp_set_num_threads(threads);
        return plan_stack(load_config(dir + "/job.toml"), RunOptions{});
    };
    const int before = omp_get_max_threads();
    const struct {
        const char* sample;
        bool stretched;
        int threads, searchers, each;
    } cases[] = {
        // The HAADF sample: a 40 x 40 window, 90 pairs: two threads a searcher.
        {"sample_tilt_series", false, 1, 1, 1},
        {"sample_tilt_series", false, 2, 1, 2},
        {"sample_tilt_series", false, 4, 2, 2},
        {"sample_tilt_series", false, 7, 3, 2},
        {"sample_tilt_series", false, 16, 8, 2},
        {"sample_tilt_series", false, 64, 22, 2},  // a searcher per 4 pairs at most
        // The time-lapse sample: a 384 x 384 window (9 x 16384 pixels), 12 pairs: eight threads a searcher.
        {"sample_timelapse", false, 2, 1, 2},
        {"sample_timelapse", false, 8, 1, 8},
        {"sample_timelapse", false, 16, 2, 8},
        {"sample_timelapse", false, 64, 3, 21},
        // Stretched: two chains, and searchers for their skips.
        {"sample_tilt_series", true, 4, 1, 4},
        {"sample_tilt_series", true, 16, 4, 4},
        {"sample_tilt_series", true, 64, 4, 16},
    };
    for (const auto& c : cases) {
        CAPTURE(c.sample);
        CAPTURE(c.stretched);
        CAPTURE(c.threads);
        const StackPlan plan = plan_of(c.sample, c.stretched, c.threads);
        CHECK(plan.searchers == c.searchers);
        CHECK(workers_threads(plan.searchers) == c.each);
    }
    // Frames above 2048^2 pixels keep one searcher with every thread.
    write_tiff_stack(dir + "/large.tif", {frame_of(PixelType::u8, 2049, 2048, std::vector<double>(2049 * 2048, 7.0)),
                                          frame_of(PixelType::u8, 2049, 2048, std::vector<double>(2049 * 2048, 9.0))});
    write_text(dir + "/large.toml", "[input]\nstack = \"large.tif\"\n[output]\ndir = \"out_large\"\n[device]\nbackend = \"cpu\"\n");
    omp_set_num_threads(16);
    CHECK(plan_stack(load_config(dir + "/large.toml"), RunOptions{}).searchers == 1);
    omp_set_num_threads(before);
}

namespace {

// The sample embryo's frames 6 and 7, 512^2, a 200^2 window searched +-8 px.
SearchSetup load_setup() {
    SearchSetup s;
    s.search = square_search(64, 156, 156, 200, 200, 8);
    return s;
}

// Frame 7 turned about the centre by `deg` (what a rigid search's candidate is).
LinearTransform turned(double deg) {
    const double a = deg * M_PI / 180;
    return {std::cos(a), -std::sin(a), std::sin(a), std::cos(a), 0, 0, 255.5, 255.5};
}

const RawFrame& embryo(int frame) { return sample_frame("sample_data/drosophila_embryo_13x512x512.tif", frame); }

// A searcher with frame 6 in slot 0 and frame 7 turned by 2 degrees in slot 1.
std::unique_ptr<PairSearcher> loaded_pair(const Device& device) {
    auto searcher = make_pair_searcher(device, load_setup());
    searcher->load(0, embryo(6));
    searcher->load_warped(1, embryo(7), turned(2), 100);
    return searcher;
}

void check_same_peak(const MiPeak& a, const MiPeak& b) {
    CHECK(a.dx == b.dx);
    CHECK(a.dy == b.dy);
    CHECK(a.mi == b.mi);
}

// A search-only load (no refinement features) is searched as a full load
// is, and refining with it is refused; a frame given again (same_frame)
// is searched as if uploaded again, also where the backend resamples it
// on the host (edges without a Sobel step in the search's bins).
void check_load_options(const Device& device) {
    const RawFrame &ref = embryo(6), &mov = embryo(7);
    const MiPeak expected = loaded_pair(device)->search(0, 1);

    auto searcher = make_pair_searcher(device, load_setup());
    searcher->load(0, ref);
    searcher->load_warped(1, mov, turned(-1), 100, load_options(false, false));
    searcher->load_warped(2, mov, turned(2), 100, load_options(false, true));
    check_same_peak(searcher->search(0, 2), expected);
    CHECK_THROWS_AS(searcher->refine(0, 2, expected), std::logic_error);
    CHECK_THROWS_AS(searcher->refine_params_at(0, 2, setup_corner(load_setup()), {}), std::logic_error);
    searcher->load_warped(3, mov, turned(2), 100);
    CHECK_NOTHROW(searcher->refine(0, 3, expected));

    SearchSetup host_edges = load_setup();
    host_edges.refine_on = RefineOn::edges;
    host_edges.preprocess.sobel = false;
    auto fresh = make_pair_searcher(device, host_edges), again = make_pair_searcher(device, host_edges);
    fresh->load(0, ref);
    fresh->load_warped(1, mov, turned(2), 100);
    again->load(0, ref);
    again->load_warped(1, mov, turned(-1), 100);
    again->load_warped(2, mov, turned(2), 100, load_options(true, true));
    const MiPeak peak = fresh->search(0, 1);
    check_same_peak(again->search(0, 2), peak);
    const ContinuousShift a = fresh->refine(0, 1, peak), b = again->refine(0, 2, peak);
    CHECK(a.x == b.x);
    CHECK(a.y == b.y);
}

}  // namespace

TEST_CASE("searchers: load options (search only, the same frame again) change no answer on the CPU") {
    check_load_options(Device{});
}

TEST_CASE("searchers: load options (search only, the same frame again) change no answer on the CUDA twin") {
    if (skip_without_gpu()) return;
    check_load_options(Device{Backend::cuda, 0});
}

// A CUDA job's kept frames are page-locked (FrameReader::lock_kept_pages):
// loads from them answer as from pageable copies, and PagesLocked follows a
// buffer that moved.
TEST_CASE("searchers: frames in page-locked memory load and search as pageable ones on the CUDA twin") {
    if (skip_without_gpu()) return;
    const Device gpu{Backend::cuda, 0};
    const MiPeak expected = loaded_pair(gpu)->search(0, 1);
    RawFrame ref = embryo(6), mov = embryo(7);
    std::vector<unsigned char> moved;
    REQUIRE(cuda::lock_pages(ref.bytes.data(), ref.bytes.size(), 0));
    cuda::PagesLocked held;  // however small the buffer (least 0)
    held.hold(mov.bytes, 0, 0);
    held.hold(mov.bytes, 0, 0);  // the same buffer: nothing to do
    auto searcher = make_pair_searcher(gpu, load_setup());
    searcher->load(0, ref);
    searcher->load_warped(1, mov, turned(2), 100);
    check_same_peak(searcher->search(0, 1), expected);
    cuda::unlock_pages(ref.bytes.data());
    moved = mov.bytes;
    held.hold(moved, 0, 0);  // the old place unlocked, the new one locked
    CHECK(cuda::lock_pages(mov.bytes.data(), mov.bytes.size(), 0));
    cuda::unlock_pages(mov.bytes.data());
}

// A job's three searches (two smoothing trials, then the pairs) each make
// new searchers: the later ones take the device memory the earlier ones
// gave back (device_pool.cu) instead of allocating, and answer the same.
TEST_CASE("searchers: a CUDA searcher made after another takes its device memory and answers the same") {
    if (skip_without_gpu()) return;
    const Device gpu{Backend::cuda, 0};
    MiPeak first;
    ContinuousShift first_shift;
    {
        const auto searcher = loaded_pair(gpu);
        first = searcher->search(0, 1);
        first_shift = searcher->refine(0, 1, first);
    }
    const cuda::DeviceMemoryCounts before = cuda::device_memory_counts();
    const auto searcher = loaded_pair(gpu);
    const MiPeak again = searcher->search(0, 1);
    const ContinuousShift again_shift = searcher->refine(0, 1, again);
    const cuda::DeviceMemoryCounts after = cuda::device_memory_counts();
    CHECK(after.allocated == before.allocated);
    CHECK(after.reused > before.reused);
    check_same_peak(again, first);
    CHECK(again_shift.x == first_shift.x);
    CHECK(again_shift.y == first_shift.y);
}

// The GPU's searches share one table of c log c (mi_search_cuda.cu), grown
// when a window larger than any before asks: a searcher made before the
// growth keeps reading its own table, and each answers as the CPU does.
TEST_CASE("searchers: CUDA searchers of a small and a larger window than any before answer as the CPU's") {
    if (skip_without_gpu()) return;
    SearchSetup small = load_setup(), large = load_setup();
    // 508^2 of the 512^2 frames: more window pixels than any other test's.
    large.search = square_search(64, 2, 2, 508, 508, 2);
    auto loaded = [](const Device& device, const SearchSetup& setup) {
        auto searcher = make_pair_searcher(device, setup);
        searcher->load(0, embryo(6));
        searcher->load(1, embryo(7));
        return searcher;
    };
    const Device gpu{Backend::cuda, 0}, cpu{};
    const auto small_gpu = loaded(gpu, small);
    const MiPeak small_before = small_gpu->search(0, 1);
    const MiPeak large_peak = loaded(gpu, large)->search(0, 1);
    const MiPeak small_after = small_gpu->search(0, 1);
    check_same_peak(small_after, small_before);
    for (const auto& [setup, peak] : {std::pair{small, small_after}, std::pair{large, large_peak}}) {
        CAPTURE(setup.search.window.width);
        const MiPeak expected = loaded(cpu, setup)->search(0, 1);
        CHECK(peak.dx == expected.dx);
        CHECK(peak.dy == expected.dy);
        CHECK(peak.mi == doctest::Approx(expected.mi).epsilon(1e-9));
        CHECK(peak.mean == doctest::Approx(expected.mean).epsilon(1e-9));
    }
}

namespace {

// A search over a smaller reach about a centre scores each of its
// candidates as the whole range's search does: where the whole range's
// peak lies inside, the same peak and score; a reach that leaves the
// range is refused.
void check_search_near(const Device& device, MiPeak& near_out) {
    const auto searcher = loaded_pair(device);
    const MiPeak whole = searcher->search(0, 1);
    const IntShift centre{std::clamp(whole.dx + 1, -5, 5), std::clamp(whole.dy - 2, -5, 5), 0};
    const MiPeak near = searcher->search_near(0, 1, centre, ShiftRange{3, 3, 0});
    CHECK(near.centre.x == centre.x);
    CHECK(near.centre.y == centre.y);
    CHECK(near.dx + centre.x == whole.dx);
    CHECK(near.dy + centre.y == whole.dy);
    CHECK(near.mi == whole.mi);
    CHECK(near.around[1][1] == whole.around[1][1]);
    CHECK_THROWS_AS(searcher->search_near(0, 1, IntShift{6, 0, 0}, ShiftRange{3, 3, 0}), std::logic_error);
    CHECK_THROWS_AS(searcher->search_near(0, 1, IntShift{}, ShiftRange{9, 1, 0}), std::logic_error);
    near_out = near;
}

}  // namespace

TEST_CASE("searchers: a search near a centre finds the whole range's peak, on the CPU and the CUDA twin") {
    MiPeak cpu_peak;
    check_search_near(Device{}, cpu_peak);
    if (skip_without_gpu()) return;
    MiPeak cuda_peak;
    check_search_near(Device{Backend::cuda, 0}, cuda_peak);
    CHECK(cuda_peak.dx == cpu_peak.dx);
    CHECK(cuda_peak.dy == cpu_peak.dy);
    CHECK(cuda_peak.mi == doctest::Approx(cpu_peak.mi).epsilon(1e-9));
}

namespace {

// The shifts.csv of the sample tilt series' job with `stretch` ([alignment])
// and `search` added, on `backend`; its run.json in `record`.
std::string tilt_shifts(const std::string& dir, const std::string& stretch, const std::string& search,
                      const std::string& backend, nlohmann::json& record) {
    // "auto" chooses per pair only within a slab's range of tilts.
    std::string cfg = tilt_config(stretch, search, backend, 1);
    if (stretch.find("auto") != std::string::npos) cfg = sample_tilt_within_slab_range(cfg, dir);
    return run_quietly(dir, cfg, record);
}

}  // namespace

// The real HAADF series: 90 pairs and 89 skips (80 and 79 within +-80
// degrees, where "auto" stretches per pair), searched +-12 px over a 40^2
// window. Every one finds the exhaustive search's integer peak (bench coarse:
// 267 of 267 pairs up to 3 views apart), and the sharpness is the same
// lattice's, so shifts.csv is the same bytes: shifts, sharpness, flags, and
// with cosine_stretch = "auto" the same stretching chosen per pair. It
// fails when the coarse map's sharpness stands in for the lattice's.
TEST_CASE("searchers: coarse to fine gives the exhaustive search's shifts.csv on the real tilt series, on the CPU and the CUDA twin") {
    const std::string dir = temp_dir("coarse_to_fine");
    for (const char* stretch : {"cosine_stretch = false", "cosine_stretch = \"auto\""}) {
        CAPTURE(stretch);
        nlohmann::json exhaustive, c2f;
        const std::string expected = tilt_shifts(dir, stretch, "", "cpu", exhaustive);
        const std::string found = tilt_shifts(dir, stretch, "coarse_to_fine = true\n", "cpu", c2f);
        CHECK(c2f["plan"]["coarse_to_fine"].get<bool>());
        CHECK(c2f["backend"].get<std::string>().find("coarse to fine") != std::string::npos);
        CHECK(exhaustive["pairs"].size() >= 80);
        CHECK(exhaustive["skip_pairs"].size() >= 79);
        CHECK(found == expected);
        if (skip_without_gpu()) continue;
        nlohmann::json cuda;
        CHECK(tilt_shifts(dir, stretch, "coarse_to_fine = true\n", "cuda", cuda) == expected);
    }
}

// [search] binning: the range scored on 4x4 block means first (what "auto"
// takes for frames over 3072 px, too large for a test) and the full-
// resolution shifts climbed from there find the exhaustive search's integer
// peaks on the real time-lapse (384^2 window, +-16 px: 96^2 blocks, +-5),
// so shifts.csv is the same bytes, as it is with 8, 16 and 32 there: the
// climb and the full-resolution lattice, not the blocks, decide the peak.
TEST_CASE("searchers: a coarse level of 4x4 block means gives the exhaustive search's shifts.csv on the real time-lapse, on the CPU and the CUDA twin") {
    const std::string dir = temp_dir("binning");
    auto shifts = [&](const std::string& search, const std::string& backend, nlohmann::json& record) {
        std::string cfg = sample_config("sample_timelapse", dir + "/out");
        cfg.replace(cfg.find("[search]\n"), 9, "[search]\n" + search);
        cfg.replace(cfg.find("backend = \"auto\""), 16, "backend = \"" + backend + "\"");
        return run_quietly(dir, cfg, record);
    };
    nlohmann::json exhaustive, binned;
    const std::string expected = shifts("coarse_to_fine = false\n", "cpu", exhaustive);
    CHECK(shifts("coarse_to_fine = true\nbinning = 4\n", "cpu", binned) == expected);
    CHECK(binned["plan"]["coarse_block"] == 4);
    CHECK(binned["backend"].get<std::string>().find("coarse to fine (4x4 block means first)") != std::string::npos);
    CHECK(exhaustive["plan"]["coarse_block"] == 1);
    if (skip_without_gpu()) return;
    nlohmann::json cuda;
    CHECK(shifts("coarse_to_fine = true\nbinning = 4\n", "cuda", cuda) == expected);
}

TEST_CASE("searchers: a binning that leaves the window under 8 blocks is a config error naming the key") {
    const std::string dir = temp_dir("binning_error");
    std::string cfg = sample_config("sample_timelapse", dir + "/out");
    cfg.replace(cfg.find("[search]\n"), 9, "[search]\nbinning = 64\n");
    write_text(dir + "/job.toml", cfg);
    CHECK_THROWS_WITH_AS(run_stack(load_config(dir + "/job.toml"), RunOptions{}),
                         doctest::Contains("binning: 64x64 blocks leave the 384x384 window under 8 blocks"), ConfigError);
}
