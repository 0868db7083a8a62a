// The MI search: known shifts of REAL frames recovered, ranges, lattices
// and ties, and the CUDA twin against the CPU (the score's arithmetic:
// test_mi_score.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <random>

#include "../kernels/cuda_api.hpp"
#include "../kernels/mi_search/mi_search.hpp"
#include "../kernels/mi_search/search_bands.hpp"
#include "../kernels/preprocess/preprocess.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

const char* drosophila = "sample_data/drosophila_embryo_13x512x512.tif";
const char* zebrafish = "sample_data/fish1_pre_anatomy_41x83x166.tif";

// A crop of the real zebrafish volume whose first corner is moved by (dx, dy, dz).
RawFrame zebrafish_crop(int dx, int dy, int dz, int w, int h, int d) {
    return crop_volume(sample_volume(zebrafish), 40 + dx, 15 + dy, 8 + dz, w, h, d);
}

// Bins of a real volume and of the same volume moved by (2, -1, 1).
std::pair<BinImage, BinImage> zebrafish_moved_pair() {
    const PreprocessParams pre{1, true, 10.0f, 64};
    return {cpu::preprocess(zebrafish_crop(0, 0, 0, 60, 50, 24), pre), cpu::preprocess(zebrafish_crop(2, -1, 1, 60, 50, 24), pre)};
}

// A w x (h*d) image seen as d slices of w x h.
BinImage volume_of(BinImage flat, int depth) {
    flat.height /= depth;
    flat.depth = depth;
    return flat;
}

// Two crops of one real frame whose top-left corners differ by (tx, ty): the
// second shows the content moved by (-tx, -ty).
std::pair<BinImage, BinImage> shifted_pair(int tx, int ty, int size, const PreprocessParams& pp) {
    const RawFrame& f = sample_frame(drosophila, 6);
    const int x0 = 150, y0 = 150;
    return {cpu::preprocess(crop(f, x0, y0, size, size), pp), cpu::preprocess(crop(f, x0 + tx, y0 + ty, size, size), pp)};
}

MiSearchParams centred(int size, int window, int max_shift, int bins) {
    return square_search(bins, (size - window) / 2, (size - window) / 2, window, window, max_shift);
}

}  // namespace

TEST_CASE("mi search: recovers known integer shifts of a real frame, negative and maximal included") {
    const PreprocessParams pp{1, true, 20.0f, 64};
    const int size = 160, m = 12;
    const MiSearchParams p = centred(size, size - 2 * m, m, 64);
    for (auto [tx, ty] : std::vector<std::pair<int, int>>{{0, 0}, {3, -5}, {-7, 2}, {12, -12}, {-12, 12}, {-12, -11}}) {
        CAPTURE(tx);
        CAPTURE(ty);
        const auto [ref, mov] = shifted_pair(tx, ty, size, pp);
        const MiPeak peak = cpu::mi_search(ref, mov, p);
        CHECK(peak.dx == -tx);
        CHECK(peak.dy == -ty);
        CHECK(peak.sharpness() > 3);
    }
}

TEST_CASE("mi search: subpixel refinement recovers a half-pixel shift of a smooth real frame") {
    // Average 2x2 blocks of a real frame, once aligned with the pixel grid and
    // once one source pixel over: the second image is the first moved by
    // exactly half a pixel, with identical blur.
    const RawFrame& f = sample_frame(drosophila, 6);
    auto downsample = [&](int off) {
        RawFrame out;
        out.type = PixelType::f32;
        out.width = out.height = 120;
        out.bytes.resize(120 * 120 * 4);
        float* o = reinterpret_cast<float*>(out.bytes.data());
        const std::uint8_t* s = f.bytes.data();
        for (int y = 0; y < 120; ++y)
            for (int x = 0; x < 120; ++x) {
                const int sx = 120 + 2 * x + off, sy = 120 + 2 * y + off;
                o[y * 120 + x] = 0.25f * (s[sy * 512 + sx] + s[sy * 512 + sx + 1] + s[(sy + 1) * 512 + sx] +
                                          s[(sy + 1) * 512 + sx + 1]);
            }
        return out;
    };
    const PreprocessParams pp{1, true, 10.0f, 32};
    const BinImage a = cpu::preprocess(downsample(0), pp), b = cpu::preprocess(downsample(1), pp);
    const MiPeak peak = cpu::mi_search(a, b, centred(120, 100, 4, 32));
    auto parabola = [](double l, double c, double r) { return 0.5 * (l - r) / (l - 2 * c + r); };
    const double dx = peak.dx + parabola(peak.around[1][0], peak.around[1][1], peak.around[1][2]);
    const double dy = peak.dy + parabola(peak.around[0][1], peak.around[1][1], peak.around[2][1]);
    CHECK(std::fabs(dx + 0.5) < 0.15);
    CHECK(std::fabs(dy + 0.5) < 0.15);
}

TEST_CASE("mi search: the CPU's map, dense or from nonzero lists, is each candidate's histogram scored alone") {
    // A range about a centre, a wider one, a stepped one, a volume, frames
    // mostly edges (threshold 2) and a blank reference. A row of candidates
    // is always odd (2 max_shift.x + 1), so its last goes alone. The dense
    // pass's maps are scored adding empty cells, the check skips them: the
    // two scans must give the same doubles.
    const auto [ref, mov] = shifted_pair(5, -3, 96, PreprocessParams{1, true, 20.0f, 64});
    const auto [dref, dmov] = shifted_pair(5, -3, 96, PreprocessParams{1, true, 2.0f, 64});
    const auto [vref, vmov] = zebrafish_moved_pair();
    const BinImage blank(96, 96, 0);
    struct Case {
        const BinImage &r, &m;
        MiSearchParams p;
    };
    MiSearchParams about = centred(96, 70, 2, 64), wide = centred(96, 70, 3, 64), stepped = centred(96, 64, 4, 64),
                   volume;
    about.centre = {-4, 2, 0};
    wide.max_shift = {3, 1, 0};
    stepped.step = {3, 2, 1};
    volume.bins = 64;
    volume.window = {4, 4, 3, 50, 40, 16};
    volume.max_shift = {3, 2, 2};
    const double dense_share = double(std::count_if(dref.pixels.begin(), dref.pixels.end(), [](int v) { return v; })) /
                               double(dref.pixels.size());
    REQUIRE(dense_share > 0.75);
    for (Case c : {Case{ref, mov, about}, Case{ref, mov, wide}, Case{ref, mov, stepped}, Case{vref, vmov, volume},
                   Case{dref, dmov, wide}, Case{blank, mov, about}, Case{ref, blank, about}})
        for (const Metric metric : {Metric::mi, Metric::nmi, Metric::cr}) {
            c.p.metric = metric;
            const std::vector<double> nlogn = nlogn_table(c.p.window_pixels());
            std::vector<std::uint32_t> h(std::size_t(c.p.bins) * c.p.bins);
            const ShiftRange& m = c.p.max_shift;
            const ShiftStep& st = c.p.step;
            for (const auto how : {cpu::CpuHistograms::dense, cpu::CpuHistograms::sparse, cpu::CpuHistograms::automatic}) {
                const std::vector<double> map = cpu::mi_map(c.r, c.m, c.p, how);
                int differing = 0;
                for (int i = 0; i < c.p.candidates(); ++i) {
                    cpu::joint_histogram(c.r, c.m, c.p, c.p.centre.x + st.x * (i % c.p.side_x() - m.x),
                                         c.p.centre.y + st.y * (i / c.p.side_x() % c.p.side_y() - m.y),
                                         c.p.centre.z + st.z * (i / (c.p.side_x() * c.p.side_y()) - m.z), h.data());
                    differing += map[i] != score_from_histogram(h.data(), c.p.bins, nlogn, metric);
                }
                CAPTURE(c.p.side_x());
                CAPTURE(int(how));
                CHECK(differing == 0);
            }
        }
}

TEST_CASE("mi search: a range about a centre scores what the wider range scores there, and finds the shift") {
    // Crops of a real frame 5 px apart in x, -3 in y, so the peak is at
    // (-5, 3): a range of 2 about (-4, 2) holds it; the wider range about 0
    // scores the same shifts alike.
    const PreprocessParams pp{1, true, 20.0f, 64};
    const auto [ref, mov] = shifted_pair(5, -3, 96, pp);
    MiSearchParams about = centred(96, 70, 2, 64);
    about.centre = {-4, 2, 0};
    const MiSearchParams wide = centred(96, 70, 6, 64);
    const std::vector<double> near = cpu::mi_map(ref, mov, about), all = cpu::mi_map(ref, mov, wide);
    int differing = 0;
    for (int i = 0; i < about.candidates(); ++i) {
        const int sx = about.centre.x + i % about.side_x() - 2, sy = about.centre.y + i / about.side_x() - 2;
        differing += near[i] != all[std::size_t(sy + 6) * wide.side_x() + sx + 6];
    }
    CHECK(differing == 0);
    const MiPeak peak = cpu::mi_search(ref, mov, about);
    CHECK(peak.centre.x + peak.dx == -5);
    CHECK(peak.centre.y + peak.dy == 3);
    // The fit check counts the centre: 13 px of margin, 8 + 6 > 13.
    MiSearchParams off = centred(96, 70, 8, 64);
    off.centre = {6, 0, 0};
    CHECK(!window_overflow(off, 96, 96).empty());
    off.centre = {5, 0, 0};
    CHECK(window_overflow(off, 96, 96).empty());
}

// The sharpness lattice (mi_search.hpp): a search of every 3rd shift of a
// +-12 range scores what the whole range scores there, and its mean and
// stddev are the whole search's, bit for bit (coarse_to_fine's sharpness).
TEST_CASE("mi search: a stepped search scores the sharpness lattice, with the whole range's mean and deviation") {
    const PreprocessParams pp{1, true, 20.0f, 64};
    const auto [ref, mov] = shifted_pair(5, -3, 96, pp);
    const MiSearchParams whole = centred(96, 64, 12, 64);
    CHECK(sharpness_step(12) == 3);
    CHECK(sharpness_step(7) == 1);
    MiSearchParams lattice = whole;
    lattice.max_shift = {4, 4, 0};
    lattice.step = {3, 3, 1};
    const std::vector<double> all = cpu::mi_map(ref, mov, whole), some = cpu::mi_map(ref, mov, lattice);
    REQUIRE(some.size() == 81);
    int differing = 0;
    for (int i = 0; i < 81; ++i) {
        const int sx = 3 * (i % 9 - 4), sy = 3 * (i / 9 - 4);
        differing += some[i] != all[std::size_t(sy + 12) * whole.side_x() + sx + 12];
    }
    CHECK(differing == 0);
    const MiPeak w = cpu::mi_search(ref, mov, whole), l = cpu::mi_search(ref, mov, lattice);
    CHECK(w.mean == l.mean);
    CHECK(w.stddev == l.stddev);
    CHECK(w.stddev > 0);
    // The peak (-5, 3) is off the lattice; the lattice's best is a lattice shift.
    CHECK((w.dx == -5 && w.dy == 3));
    CHECK((l.dx % 3 == 0 && l.dy % 3 == 0));
    CHECK(w.sharpness() > l.sharpness());
}

TEST_CASE("mi search: ties go to the smallest shift, deterministically") {
    std::vector<double> map(25, 1.0);  // max_shift 2, flat
    MiPeak p = peak_from_map(map, {2, 2, 0});
    CHECK(p.dx == 0);
    CHECK(p.dy == 0);
    CHECK(p.sharpness() == 0);
    map.assign(25, 0.0);
    map[0] = map[24] = 2.0;  // (-2,-2) and (2,2): same |s|, smaller sy wins
    p = peak_from_map(map, {2, 2, 0});
    CHECK(p.dx == -2);
    CHECK(p.dy == -2);
    CHECK(std::isnan(p.around[0][0]));
    CHECK(p.around[1][1] == 2.0);
}

TEST_CASE("mi search: a window that leaves the frame is rejected") {
    MiSearchParams p = centred(100, 80, 11, 8);
    CHECK_THROWS(check_window_fits(p, 100, 100));
    p.max_shift = {10, 10, 0};
    CHECK_NOTHROW(check_window_fits(p, 100, 100));
}

TEST_CASE("mi search 3D: a real volume moved by known shifts is found exactly") {
    const PreprocessParams pp{1, true, 10.0f, 64};
    const BinImage ref = cpu::preprocess(zebrafish_crop(0, 0, 0, 70, 50, 24), pp);
    for (auto [tx, ty, tz] : {std::array<int, 3>{3, -2, 1}, {-4, 0, -2}, {0, 0, 0}}) {
        CAPTURE(tx);
        CAPTURE(ty);
        CAPTURE(tz);
        // The crop starting at +t shows the content moved by -t.
        const BinImage mov = cpu::preprocess(zebrafish_crop(tx, ty, tz, 70, 50, 24), pp);
        MiSearchParams p;
        p.bins = 64;
        p.window = {12, 10, 5, 45, 29, 13};
        p.max_shift = {5, 4, 3};
        CHECK_NOTHROW(check_window_fits(p, 70, 50, 24));
        const MiPeak peak = cpu::mi_search(ref, mov, p);
        CHECK(peak.dx == -tx);
        CHECK(peak.dy == -ty);
        CHECK(peak.dz == -tz);
        CHECK(peak.around_z[1] == peak.mi);
        CHECK(peak.sharpness() > 3);
    }
    MiSearchParams p;
    p.window = {2, 2, 1, 20, 20, 10};
    p.max_shift = {2, 2, 2};
    CHECK(window_overflow(p, 70, 50, 24) == "it reaches z = -1 (< 0)");
    CHECK_THROWS_WITH(check_window_fits(p, 70, 50, 24),
                      "search window 20x20x10 at (2,2,1) moved by up to max_shift [2, 2, 2] leaves the 70x50x24 "
                      "volume: it reaches z = -1 (< 0)");
}

// ---- CUDA twin -------------------------------------------------------------

TEST_CASE("mi search: a banded launch's blocks fill whole waves of the GPU") {
    // A launch takes ceil(blocks / slots) waves of a block's time, 1 / bands
    // of a window: the ideal is candidates / slots. The K3 and 4096^2 jobs'
    // windows with the climb's, the lattice's and the chance stage's counts
    // (49, 81, 289) on the H200's 132 SMs at 4 blocks each.
    const int slots = 528;
    for (const auto& [rows, pixels] : {std::pair<long long, double>{3952, 5620.0 * 3952}, {3956, 3956.0 * 3956}})
        for (const int candidates : {9, 25, 49, 81, 121, 169, 289}) {
            CAPTURE(pixels);
            CAPTURE(candidates);
            const int bands = search_bands(candidates, rows, pixels, slots);
            const long long waves = ((long long)candidates * bands + slots - 1) / slots;
            CHECK(double(waves) / bands <= 1.1 * candidates / slots);
            CHECK(waves <= 4);
            CHECK(pixels / bands >= kMinSearchBandPixels);
        }
    CHECK(search_bands(600, 3952, 5620.0 * 3952, slots) == 1);  // the candidates fill the slots
    CHECK(search_bands(49, 300, 300.0 * 300, slots) == 1);      // a small window: a block per candidate
    CHECK(search_bands(49, 5, 5.0 * 400000, slots) <= 5);       // never more bands than rows
}

TEST_CASE("mi search: CUDA histograms, MI and shifts equal the CPU's for every strategy") {
    if (skip_without_gpu()) return;
    std::mt19937 rng(11);
    struct Case {
        const char* name;
        BinImage ref, mov;
        MiSearchParams p;
    };
    std::vector<Case> cases;
    auto random_image = [&](int w, int h, int bins, double zeros) {
        const auto v = random_bins(rng, w * h, bins, zeros);
        return bins_from(v, w);
    };
    {
        const auto [r, m] = shifted_pair(5, -3, 96, PreprocessParams{1, true, 20.0f, 64});
        cases.push_back({"real 64 bins", r, m, centred(96, 70, 8, 64)});
    }
    {
        const auto [r, m] = shifted_pair(-2, 4, 80, PreprocessParams{1, true, 5.0f, 256});
        cases.push_back({"real 256 bins", r, m, centred(80, 61, 6, 256)});
    }
    {
        // A skip pair's search: the range about a predicted centre.
        const auto [r, m] = shifted_pair(5, -3, 96, PreprocessParams{1, true, 20.0f, 64});
        MiSearchParams p = centred(96, 70, 8, 64);
        p.centre = {-4, 2, 0};
        cases.push_back({"real, about a centre", r, m, p});
    }
    {
        // coarse_to_fine's sharpness lattice: every 3rd shift of +-12.
        const auto [r, m] = shifted_pair(5, -3, 96, PreprocessParams{1, true, 20.0f, 64});
        MiSearchParams p = centred(96, 64, 4, 64);
        p.step = {3, 3, 1};
        cases.push_back({"real, every 3rd shift", r, m, p});
        cases.push_back({"real, +-12 (a lattice's statistics)", r, m, centred(96, 64, 12, 64)});
    }
    cases.push_back({"random odd window", random_image(53, 47, 32, 0.5), random_image(53, 47, 32, 0.5),
                     square_search(32, 7, 5, 37, 33, 5)});
    cases.push_back({"1-pixel window", random_image(9, 9, 8, 0.3), random_image(9, 9, 8, 0.3),
                     square_search(8, 4, 4, 1, 1, 3)});
    cases.push_back({"max_shift 0", random_image(40, 30, 16, 0.7), random_image(40, 30, 16, 0.7),
                     square_search(16, 0, 0, 40, 30, 0)});
    cases.push_back({"empty edge maps", BinImage(50, 50, 0), BinImage(50, 50, 0), centred(50, 30, 5, 64)});
    {
        // 3D: unequal half-ranges per axis.
        const auto [v, w] = zebrafish_moved_pair();
        MiSearchParams p;
        p.bins = 64;
        p.window = {10, 9, 6, 37, 30, 11};
        p.max_shift = {4, 3, 2};
        cases.push_back({"3D real volume", v, w, p});
        MiSearchParams q = p;
        q.window = {5, 4, 3, 17, 13, 7};
        q.max_shift = {5, 2, 3};
        cases.push_back({"3D random odd", volume_of(random_image(60, 50 * 24, 16, 0.6), 24),
                         volume_of(random_image(60, 50 * 24, 16, 0.6), 24), q});
    }
    cases.push_back({"saturated", BinImage(50, 50, 63), BinImage(50, 50, 63), centred(50, 30, 5, 64)});
    // A few candidates over a large window: shared and replicated split the
    // rows among 8 blocks per candidate (hist_shared_band), whose counts
    // meet in global memory.
    cases.push_back({"large window, few candidates", random_image(1456, 1456, 64, 0.6),
                     random_image(1456, 1456, 64, 0.6), centred(1456, 1452, 2, 64)});
    cases.push_back({"dense 2 bins", random_image(300, 260, 2, 0.0), random_image(300, 260, 2, 0.0),
                     centred(260, 257, 1, 2)});

    for (const Case& c : cases) {
        for (const HistogramStrategy strategy : cuda::strategies(c.p)) {
            CAPTURE(c.name);
            CAPTURE(name_of(strategy));
            const int n = c.p.candidates(), sx = c.p.side_x(), sy = c.p.side_y(), bb = c.p.bins * c.p.bins;
            const ShiftRange& m = c.p.max_shift;
            const IntShift& o = c.p.centre;
            const std::vector<std::uint32_t> gpu_h = cuda::joint_histograms(c.ref, c.mov, c.p, strategy);
            REQUIRE(gpu_h.size() == std::size_t(n) * bb);
            std::vector<std::uint32_t> cpu_h(bb);
            int mismatched = 0;
            for (int i = 0; i < n; ++i) {
                const ShiftStep& st = c.p.step;
                cpu::joint_histogram(c.ref, c.mov, c.p, o.x + st.x * (i % sx - m.x), o.y + st.y * (i / sx % sy - m.y),
                                     o.z + st.z * (i / (sx * sy) - m.z), cpu_h.data());
                mismatched += !std::equal(cpu_h.begin(), cpu_h.end(), gpu_h.begin() + std::size_t(i) * bb);
            }
            CHECK(mismatched == 0);
            const std::vector<double> cpu_map = cpu::mi_map(c.ref, c.mov, c.p);
            const std::vector<double> gpu_map = cuda::mi_map(c.ref, c.mov, c.p, strategy);
            REQUIRE(gpu_map.size() == cpu_map.size());
            double worst = 0;
            for (int i = 0; i < n; ++i)
                worst = std::max(worst, std::fabs(gpu_map[i] - cpu_map[i]) / std::max(1e-12, std::fabs(cpu_map[i])));
            CHECK(worst < 1e-6);
            const MiPeak cp = cpu::mi_search(c.ref, c.mov, c.p), gp = cuda::mi_search(c.ref, c.mov, c.p, strategy);
            CHECK(gp.dx == cp.dx);
            CHECK(gp.dy == cp.dy);
            CHECK(gp.dz == cp.dz);
            CHECK((gp.centre.x == o.x && gp.centre.y == o.y && gp.centre.z == o.z));
            CHECK((cp.centre.x == o.x && cp.centre.y == o.y && cp.centre.z == o.z));
            for (int k = 0; k < 3; ++k)
                if (!std::isnan(cp.around_z[k])) CHECK(gp.around_z[k] == doctest::Approx(cp.around_z[k]).epsilon(1e-6));
            CHECK(gp.mi == doctest::Approx(cp.mi).epsilon(1e-6));
            for (int j = 0; j < 3; ++j)
                for (int i = 0; i < 3; ++i)
                    if (!std::isnan(cp.around[j][i])) CHECK(gp.around[j][i] == doctest::Approx(cp.around[j][i]).epsilon(1e-6));
            CHECK(gp.mean == doctest::Approx(cp.mean).epsilon(1e-6));
            CHECK(gp.stddev == doctest::Approx(cp.stddev).epsilon(1e-6));
        }
    }
}

TEST_CASE("mi search: CUDA searches of many windows at once equal the CPU's one by one") {
    if (skip_without_gpu()) return;
    // Windows spread over the volume, searched 3 per launch so that launches split the list.
    const auto [v, w] = zebrafish_moved_pair();
    MiSearchParams p;
    p.bins = 64;
    p.window = {5, 4, 3, 17, 15, 7};
    p.max_shift = {4, 3, 2};
    const std::vector<WindowCorner> corners = {{5, 4, 3}, {30, 20, 10}, {38, 31, 14}, {12, 28, 5}, {25, 6, 12},
                                               {5, 4, 3}, {20, 15, 8}};
    for (const HistogramStrategy strategy : cuda::strategies(p)) {
        for (int per_launch : {0, 3}) {
            CAPTURE(name_of(strategy));
            CAPTURE(per_launch);
            const std::vector<MiPeak> gpu = cuda::mi_search_windows(v, w, p, corners, strategy, per_launch);
            REQUIRE(gpu.size() == corners.size());
            for (std::size_t i = 0; i < corners.size(); ++i) {
                CAPTURE(i);
                MiSearchParams q = p;
                q.window.x = corners[i].x;
                q.window.y = corners[i].y;
                q.window.z = corners[i].z;
                const MiPeak cpu = cpu::mi_search(v, w, q);
                CHECK(gpu[i].dx == cpu.dx);
                CHECK(gpu[i].dy == cpu.dy);
                CHECK(gpu[i].dz == cpu.dz);
                CHECK(gpu[i].mi == doctest::Approx(cpu.mi).epsilon(1e-9));
                CHECK(gpu[i].mean == doctest::Approx(cpu.mean).epsilon(1e-9));
                CHECK(gpu[i].stddev == doctest::Approx(cpu.stddev).epsilon(1e-6));
                for (int j = 0; j < 9; ++j) {
                    const double a = gpu[i].around[j / 3][j % 3], b = cpu.around[j / 3][j % 3];
                    CHECK(std::isnan(a) == std::isnan(b));
                    if (!std::isnan(b)) CHECK(a == doctest::Approx(b).epsilon(1e-9));
                }
                for (int k = 0; k < 3; ++k) {
                    CHECK(std::isnan(gpu[i].around_z[k]) == std::isnan(cpu.around_z[k]));
                    if (!std::isnan(cpu.around_z[k])) CHECK(gpu[i].around_z[k] == doctest::Approx(cpu.around_z[k]).epsilon(1e-9));
                }
            }
        }
    }
}

TEST_CASE("nmi: (H(A)+H(B))/H(A,B) from the histogram; known shifts of a real frame found with it; CUDA equals CPU") {
    // Against entropies computed directly in double precision.
    std::mt19937 rng(5);
    const int bins = 16;
    const auto a = random_bins(rng, 400, bins, 0.5);
    auto b = a;
    for (int& x : b)
        if (std::uniform_real_distribution<>(0, 1)(rng) < 0.3) x = std::uniform_int_distribution<>(0, bins - 1)(rng);
    auto entropy = [&](const std::map<std::pair<int, int>, int>& counts) {
        double h = 0;
        for (const auto& [k, c] : counts) h -= double(c) / a.size() * std::log(double(c) / a.size());
        return h;
    };
    std::map<std::pair<int, int>, int> ca, cb, cab;
    for (std::size_t i = 0; i < a.size(); ++i) ++ca[{a[i], 0}], ++cb[{b[i], 0}], ++cab[{a[i], b[i]}];
    MiSearchParams p;
    p.bins = bins;
    p.window = {0, 0, 0, int(a.size()), 1, 1};
    std::vector<std::uint32_t> h(bins * bins);
    cpu::joint_histogram(bins_from(a, int(a.size())), bins_from(b, int(b.size())), p, 0, 0, 0, h.data());
    const std::vector<double> nlogn = nlogn_table(p.window_pixels());
    CHECK(score_from_histogram(h.data(), bins, nlogn, Metric::nmi) ==
          doctest::Approx((entropy(ca) + entropy(cb)) / entropy(cab)).epsilon(1e-12));
    CHECK(score_from_histogram(h.data(), bins, nlogn, Metric::mi) == mi_from_histogram(h.data(), bins, nlogn));
    std::vector<std::uint32_t> constant(bins * bins, 0);
    constant[0] = 400;
    CHECK(score_from_histogram(constant.data(), bins, nlogn, Metric::nmi) == 1.0);

    // Known integer shifts of a real frame, searched by NMI.
    for (auto [tx, ty] : {std::pair{5, -3}, std::pair{-7, 0}}) {
        const auto [r, m] = shifted_pair(tx, ty, 96, PreprocessParams{1, true, 20.0f, 64});
        MiSearchParams q = centred(96, 70, 8, 64);
        q.metric = Metric::nmi;
        const MiPeak peak = cpu::mi_search(r, m, q);
        CHECK(peak.dx == -tx);
        CHECK(peak.dy == -ty);
        CHECK(peak.mi > 1.0);
        if (cuda::device_count() == 0) continue;  // the GPU half runs on the GPU machine
        for (const HistogramStrategy strategy : cuda::strategies(q)) {
            CAPTURE(name_of(strategy));
            const std::vector<double> g = cuda::mi_map(r, m, q, strategy), c = cpu::mi_map(r, m, q);
            REQUIRE(g.size() == c.size());
            for (std::size_t i = 0; i < c.size(); ++i) CHECK(g[i] == doctest::Approx(c[i]).epsilon(1e-9));
            const MiPeak gp = cuda::mi_search(r, m, q, strategy);
            CHECK(gp.dx == peak.dx);
            CHECK(gp.dy == peak.dy);
        }
    }
}
