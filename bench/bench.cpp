// Benchmarks (never pass/fail): `bench cpu`, `bench gpu`, `bench strategies`
// (the per-strategy GPU table alone), `bench methods` (methods.cpp) and
// `bench stages` (stages.cpp), `bench loads CONFIG` (loads.cpp), `bench coarse` (coarse.cpp), `bench slab` (slab.cpp). Every speed is
// reported next to the number it is compared with, measured in the same run.
//
// Workloads are built from the real Drosophila time-lapse in sample_data/:
//  - "pair": two neighbouring real frames (512x512), window 384, max_shift 16;
//  - "standard job": 121 frames of 1024x1024 uint16 cut from a 2.5x upsampled
//    real frame at a random-walk of known integer offsets, window 512x512,
//    max_shift 24, 64 bins, run end to end through the CLI.
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../kernels/cuda_api.hpp"
#include "../kernels/mi_search/mi_search.hpp"
#include "../kernels/preprocess/preprocess.hpp"
#include "../src/io/tiff_io.hpp"
#include "coarse.hpp"
#include "loads.hpp"
#include "methods.hpp"
#include "slab.hpp"
#include "stages.hpp"

namespace fs = std::filesystem;
using namespace stackalign;
using Clock = std::chrono::steady_clock;

namespace {

std::string repo(const std::string& p) { return std::string(STACKALIGN_SOURCE_DIR) + "/" + p; }

double seconds(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

template <typename F>
double median_seconds(int repeats, F&& f) {
    std::vector<double> t;
    for (int i = 0; i < repeats; ++i) {
        const auto s = Clock::now();
        f();
        t.push_back(seconds(s));
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

MiSearchParams centred(int w, int h, int win, int m, int bins) {
    return square_search(bins, (w - win) / 2, (h - win) / 2, win, win, m);
}

// 1024x1024 uint16 frames cut from a bilinearly upsampled real frame.
std::vector<RawFrame> standard_series(int frames, std::vector<std::pair<int, int>>& offsets) {
    const Stack src = read_tiff_stack(repo("sample_data/drosophila_embryo_13x512x512.tif"));
    const RawFrame& f = src.frames[6];
    const int big = 1280;
    const double scale = 511.0 / (big - 1);
    std::vector<std::uint16_t> up(std::size_t(big) * big);
    for (int y = 0; y < big; ++y)
        for (int x = 0; x < big; ++x) {
            const double sx = x * scale, sy = y * scale;
            const int x0 = std::min(int(sx), 510), y0 = std::min(int(sy), 510);
            const double fx = sx - x0, fy = sy - y0;
            auto p = [&](int xx, int yy) { return double(f.bytes[std::size_t(yy) * 512 + xx]); };
            const double v = (1 - fy) * ((1 - fx) * p(x0, y0) + fx * p(x0 + 1, y0)) +
                             fy * ((1 - fx) * p(x0, y0 + 1) + fx * p(x0 + 1, y0 + 1));
            up[std::size_t(y) * big + x] = std::uint16_t(v * 200 + 500);
        }
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> step(-3, 3);
    int ox = 128, oy = 128;
    std::vector<RawFrame> out;
    for (int k = 0; k < frames; ++k) {
        ox = std::clamp(ox + step(rng), 100, 156);
        oy = std::clamp(oy + step(rng), 100, 156);
        offsets.push_back({ox, oy});
        RawFrame fr;
        fr.type = PixelType::u16;
        fr.width = fr.height = 1024;
        fr.bytes.resize(1024 * 1024 * 2);
        auto* o = reinterpret_cast<std::uint16_t*>(fr.bytes.data());
        for (int y = 0; y < 1024; ++y)
            std::copy_n(&up[std::size_t(y + oy) * big + ox], 1024, o + std::size_t(y) * 1024);
        out.push_back(std::move(fr));
    }
    return out;
}

double run_cli_seconds(const std::string& args) {
    const auto t = Clock::now();
    const int rc = std::system((repo("build/stackalign") + " " + args).c_str());
    if (rc != 0) std::printf("  (command failed: %s)\n", args.c_str());
    return seconds(t);
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void bench_cpu() {
    const Stack s = read_tiff_stack(repo("sample_data/drosophila_embryo_13x512x512.tif"));
    const PreprocessParams pp{1, true, 20.0f, 64};
    const BinImage a = cpu::preprocess(s.frames[5], pp), b = cpu::preprocess(s.frames[6], pp);
    const MiSearchParams p = centred(512, 512, 384, 16, 64);
    const double updates = double(p.window_pixels()) * p.candidates();
    const int cores = omp_get_num_procs();
    std::printf("## CPU MI search: real Drosophila pair, window 384x384, max_shift 16 (%d candidates), 64 bins\n\n",
                p.candidates());
    std::printf("| threads | seconds | M pair-updates/s | per thread | scaling vs 1 thread |\n|---|---|---|---|---|\n");
    double t1 = 0;
    for (int threads : {1, cores}) {
        omp_set_num_threads(threads);
        const double t = median_seconds(3, [&] { cpu::mi_search(a, b, p); });
        if (threads == 1) t1 = t;
        std::printf("| %d | %.3f | %.0f | %.0f | %.2fx |\n", threads, t, updates / t / 1e6, updates / t / 1e6 / threads,
                    t1 / t);
    }
    omp_set_num_threads(cores);
    // How the map's histograms are counted (CpuHistograms), on pairs of
    // real frames as edge maps of several densities: mi_map's automatic
    // choice against the dense pass and the nonzero lists.
    std::printf("\n## CPU histograms: dense pass against nonzero lists, %d threads, max_shift 16\n\n", cores);
    std::printf("| frames | window | threshold | nonzero | dense ms | lists ms | automatic ms | maps equal |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    for (const auto& [first, window] : {std::pair{0, 384}, std::pair{5, 384}, std::pair{0, 96}})
        for (const float threshold : {20.0f, 10.0f, 5.0f}) {
            const PreprocessParams q{1, true, threshold, 64};
            const BinImage r = cpu::preprocess(s.frames[first], q), m = cpu::preprocess(s.frames[first + 1], q);
            const MiSearchParams w = centred(512, 512, window, 16, 64);
            std::size_t nonzero = 0;
            for (const std::uint8_t v : r.pixels) nonzero += v != 0;
            std::vector<double> maps[3];
            double ms[3];
            for (int how = 0; how < 3; ++how)
                ms[how] = 1e3 * median_seconds(3, [&] { maps[how] = cpu::mi_map(r, m, w, cpu::CpuHistograms(how)); });
            std::printf("| %d, %d | %d | %.0f | %.0f %% | %.1f | %.1f | %.1f | %s |\n", first, first + 1, window,
                        threshold, 100.0 * nonzero / r.pixels.size(), ms[1], ms[2], ms[0],
                        maps[0] == maps[1] && maps[1] == maps[2] ? "yes" : "NO");
        }
    const double job = median_seconds(3, [] { run_cli_seconds("run --quiet --backend cpu " + repo("configs/sample_tilt_series.toml")); });
    const double job2 = median_seconds(1, [] { run_cli_seconds("run --quiet --backend cpu " + repo("configs/sample_timelapse.toml")); });
    std::printf("\nsample jobs, wall time end to end (%d threads): sample_tilt_series %.3f s, sample_timelapse %.3f s\n",
                cores, job, job2);
}

void bench_gpu() {
    if (cuda::device_count() == 0) {
        std::printf("no CUDA GPU: nothing to benchmark\n");
        return;
    }
    std::printf("GPU: %s; host cores: %d\n\n", cuda::device_name(0).c_str(), omp_get_num_procs());
    const Stack s = read_tiff_stack(repo("sample_data/drosophila_embryo_13x512x512.tif"));
    std::vector<std::pair<int, int>> std_offsets;
    const std::vector<RawFrame> std_frames = standard_series(2, std_offsets);
    struct Workload {
        const char* name;
        const RawFrame *a, *b;
        MiSearchParams p;
    };
    const Workload workloads[] = {
        {"Drosophila pair 512x512, window 384, max_shift 16", &s.frames[5], &s.frames[6], centred(512, 512, 384, 16, 64)},
        {"standard-job pair 1024x1024, window 512, max_shift 24", &std_frames[0], &std_frames[1],
         centred(1024, 1024, 512, 24, 64)}};
    std::printf("## GPU MI search per strategy, 64 bins, real frames\n\n");
    std::printf("| workload | edge map | zero pairs | strategy | ms/pair | G pair-updates/s | of 1.7 T ceiling | CPU %d threads ms | GPU/CPU |\n",
                omp_get_num_procs());
    std::printf("|---|---|---|---|---|---|---|---|---|\n");
    for (const Workload& w : workloads) {
        const MiSearchParams& p = w.p;
        const double updates = double(p.window_pixels()) * p.candidates();
        for (float threshold : {0.0f, 20.0f}) {
            const PreprocessParams pp{1, true, threshold, 64};
            const BinImage a = cpu::preprocess(*w.a, pp), b = cpu::preprocess(*w.b, pp);
            std::vector<std::uint32_t> h(64 * 64);
            cpu::joint_histogram(a, b, p, 0, 0, 0, h.data());
            const double zero_frac = double(h[0]) / double(p.window_pixels());
            const double cpu_ms = 1e3 * median_seconds(3, [&] { cpu::mi_search(a, b, p); });
            for (const HistogramStrategy st : cuda::strategies(p)) {
                const double ms = cuda::time_search_ms(a, b, p, st, 20);
                std::printf("| %s | %s | %.0f%% | %s | %.3f | %.0f | %.0f%% | %.1f | %.0fx |\n", w.name,
                            threshold == 0 ? "dense (threshold 0)" : "thresholded (20)", 100 * zero_frac, name_of(st).c_str(),
                            ms, updates / ms / 1e6, 100 * updates / ms / 1e6 / 1700, cpu_ms, cpu_ms / ms);
            }
        }
    }

}

// The standard job, end to end through the CLI, GPU and CPU side by side.
void bench_standard_job() {
    if (cuda::device_count() == 0) return;
    const std::string dir = repo("build/bench-standard");
    fs::create_directories(dir);
    std::vector<std::pair<int, int>> offsets;
    const std::vector<RawFrame> frames = standard_series(121, offsets);
    write_tiff_stack(dir + "/series.tif", frames);
    for (const char* b : {"cuda", "cpu"}) {
        std::ofstream(dir + "/" + b + ".toml")
            << "[input]\nstack = \"series.tif\"\n[preprocess]\nbins = 64\n[search]\nwindow = [512, 512]\n"
               "max_shift = 24\nsubpixel = false\n[output]\ndir = \"out_" << b << "\"\n[device]\nbackend = \"" << b << "\"\n";
    }
    run_cli_seconds("run --quiet " + dir + "/cuda.toml");  // warm the page cache and the driver
    const double gpu_s = run_cli_seconds("run --quiet " + dir + "/cuda.toml");
    const double cpu_s = run_cli_seconds("run --quiet " + dir + "/cpu.toml");
    auto search_seconds = [&](const char* b) {
        const std::string j = slurp(dir + "/out_" + b + "/run.json");
        const auto at = j.find("\"search\": ", j.find("\"seconds\""));
        return std::atof(j.c_str() + at + 10);
    };
    const double gs = search_seconds("cuda"), cs = search_seconds("cpu");
    const bool same = slurp(dir + "/out_cuda/shifts.csv") == slurp(dir + "/out_cpu/shifts.csv");
    int exact = 0;
    {
        std::istringstream csv(slurp(dir + "/out_cuda/shifts.csv"));
        std::string line;
        std::getline(csv, line);
        for (int k = 0; std::getline(csv, line); ++k) {
            double dx, dy;
            std::sscanf(line.c_str(), "%*d,%lf,%lf", &dx, &dy);
            exact += dx == -(offsets[k].first - offsets[60].first) && dy == -(offsets[k].second - offsets[60].second);
        }
    }
    const double upd = 512.0 * 512 * 49 * 49 * 120;
    std::printf("\n## Standard job: 121 x 1024x1024 uint16, window 512x512, max_shift 24 (2401 candidates), 64 bins\n\n");
    std::printf("| backend | wall s (end to end) | search s | G pair-updates/s |\n|---|---|---|---|\n");
    std::printf("| cuda | %.2f | %.3f | %.0f |\n| cpu (%d threads) | %.2f | %.3f | %.1f |\n", gpu_s, gs, upd / gs / 1e9,
                omp_get_num_procs(), cpu_s, cs, upd / cs / 1e9);
    std::printf("\nsearch speed-up GPU/CPU: %.0fx; end-to-end speed-up: %.1fx; shifts.csv identical: %s; "
                "frames at their known offset: %d/121\n",
                cs / gs, cpu_s / gpu_s, same ? "yes" : "NO", exact);
}

// Landmarks: 100 points, window 31x31x15, max_shift [10,10,5], 64 bins, in a
// 512x512x128 volume upsampled from the real zebrafish brain; the target is
// the same volume moved by a known integer shift. CLI end to end, both backends.
void bench_landmarks(bool with_gpu) {
    const std::string dir = repo("build/bench-landmarks");
    fs::create_directories(dir);
    const RawFrame src = read_tiff_volume(repo("sample_data/fish1_pre_anatomy_41x83x166.tif"));
    const int W = 512, H = 512, D = 128, tx = 4, ty = -3, tz = 2;
    auto upsample = [&](int ox, int oy, int oz) {
        RawFrame v;
        v.type = PixelType::u16;
        v.width = W;
        v.height = H;
        v.depth = D;
        v.bytes.resize(std::size_t(W) * H * D * 2);
        auto* o = reinterpret_cast<std::uint16_t*>(v.bytes.data());
        const auto* in = reinterpret_cast<const std::uint16_t*>(src.bytes.data());
        const double fx = (src.width - 1.0) / (W + 40), fy = (src.height - 1.0) / (H + 40), fz = (src.depth - 1.0) / (D + 20);
        #pragma omp parallel for
        for (int z = 0; z < D; ++z)
            for (int y = 0; y < H; ++y)
                for (int x = 0; x < W; ++x) {
                    // Content moved by (ox, oy, oz) output voxels.
                    const double sx = (x - ox + 20) * fx, sy = (y - oy + 20) * fy, sz = (z - oz + 10) * fz;
                    const int x0 = std::min(int(sx), src.width - 2), y0 = std::min(int(sy), src.height - 2),
                              z0 = std::min(int(sz), src.depth - 2);
                    const double ax = sx - x0, ay = sy - y0, az = sz - z0;
                    double val = 0;
                    for (int k = 0; k < 2; ++k)
                        for (int j = 0; j < 2; ++j)
                            for (int i = 0; i < 2; ++i)
                                val += (i ? ax : 1 - ax) * (j ? ay : 1 - ay) * (k ? az : 1 - az) *
                                       in[(std::size_t(z0 + k) * src.height + y0 + j) * src.width + x0 + i];
                    o[(std::size_t(z) * H + y) * W + x] = std::uint16_t(std::lround(val));
                }
        return v;
    };
    write_tiff_volume(dir + "/source.tif", upsample(0, 0, 0));
    write_tiff_volume(dir + "/target.tif", upsample(tx, ty, tz));
    {
        std::ofstream pts(dir + "/points.csv");
        pts << "name,x,y,z\n";
        for (int i = 0; i < 100; ++i)  // a 5 x 5 x 4 grid inside the searchable region
            pts << "p" << i << "," << 40 + (i % 5) * 108 << "," << 40 + (i / 5 % 5) * 108 << "," << 20 + (i / 25) * 29 << "\n";
    }
    for (const char* b : {"cuda", "cpu"})
        std::ofstream(dir + "/" + b + ".toml")
            << "mode = \"landmarks\"\n[landmarks]\nsource = \"source.tif\"\ntarget = \"target.tif\"\npoints = "
               "\"points.csv\"\nwindow = [31, 31, 15]\nmax_shift = [10, 10, 5]\n[preprocess]\nbins = 64\nthreshold = 10.0\n"
               "[output]\ndir = \"out_" << b << "\"\nfit = \"affine\"\n[device]\nbackend = \"" << b << "\"\n";
    auto stats = [&](const char* b) {
        const auto j = nlohmann::json::parse(slurp(dir + "/out_" + b + "/run.json"));
        return std::make_pair(j["seconds"]["search"].get<double>(), j["voxel_updates_per_second"].get<double>());
    };
    // Matched points (dst_x, dst_y, dst_z) of one backend's matches.csv, and
    // how many sit at the known shift.
    auto matched = [&](const char* b) {
        std::istringstream csv(slurp(dir + "/out_" + b + "/matches.csv"));
        std::string line;
        std::getline(csv, line);
        std::vector<std::array<double, 3>> dst;
        while (std::getline(csv, line)) {
            double v[9];
            char name[32];
            if (std::sscanf(line.c_str(), "%31[^,],%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", name, &v[0], &v[1], &v[2], &v[3],
                            &v[4], &v[5], &v[6], &v[7], &v[8]) == 10)
                dst.push_back({v[3], v[4], v[5]});
            else
                dst.push_back({NAN, NAN, NAN});  // skipped
        }
        return dst;
    };
    auto exact = [&](const char* b) {
        int n = 0;
        std::istringstream csv(slurp(dir + "/out_" + b + "/matches.csv"));
        std::string line;
        std::getline(csv, line);
        while (std::getline(csv, line)) {
            double v[9];
            char name[32];
            if (std::sscanf(line.c_str(), "%31[^,],%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", name, &v[0], &v[1], &v[2], &v[3],
                            &v[4], &v[5], &v[6], &v[7], &v[8]) == 10)
                n += std::lround(v[6]) == tx && std::lround(v[7]) == ty && std::lround(v[8]) == tz;
        }
        return n;
    };
    std::printf("\n## Landmarks: 100 points, window 31x31x15, max_shift [10,10,5] (4851 candidates), 64 bins, "
                "512x512x128 uint16\n\n| backend | wall s (end to end) | search s | G voxel-updates/s | points at the known shift |\n"
                "|---|---|---|---|---|\n");
    double gpu_search = 0, cpu_search = 0;
    for (const char* b : {"cuda", "cpu"}) {
        if (std::string(b) == "cuda" && !with_gpu) continue;
        if (std::string(b) == "cuda") run_cli_seconds("run --quiet " + dir + "/cuda.toml");  // warm-up
        const double wall = run_cli_seconds("run --quiet " + dir + "/" + b + ".toml");
        const auto [search, rate] = stats(b);
        (std::string(b) == "cuda" ? gpu_search : cpu_search) = search;
        std::printf("| %s%s | %.2f | %.3f | %.1f | %d/100 |\n", b, std::string(b) == "cpu" ? " (all cores)" : "", wall,
                    search, rate / 1e9, exact(b));
    }
    if (with_gpu) {
        const auto j = nlohmann::json::parse(slurp(dir + "/out_cuda/run.json"));
        std::printf("\ncuda backend: %s\n", j["backend"].get<std::string>().c_str());
    }
    if (with_gpu) {
        // Subpixel positions may differ in the last digits (MI sums in another
        // order); the integer peaks may not, and would move a point by >= 0.5.
        const auto c = matched("cpu"), g = matched("cuda");
        double worst = c.size() == g.size() ? 0 : INFINITY;
        for (std::size_t i = 0; i < c.size() && i < g.size(); ++i)
            for (int k = 0; k < 3; ++k)
                worst = std::isnan(c[i][k]) != std::isnan(g[i][k]) ? INFINITY
                        : std::isnan(c[i][k])                        ? worst
                                                                     : std::max(worst, std::fabs(c[i][k] - g[i][k]));
        std::printf("\nsearch speed-up GPU/CPU: %.0fx; largest difference of a matched point between the backends: "
                    "%.2g voxels\n", cpu_search / gpu_search, worst);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const std::string what = argc > 1 ? argv[1] : "cpu";
    try {
        if (what == "cpu") bench_cpu();
        else if (what == "strategies") bench_gpu();
        else if (what == "landmarks") bench_landmarks(cuda::device_count() > 0);
        else if (what == "methods") stackalign::bench::methods();
        else if (what == "stages") stackalign::bench::stages(argc > 2 ? argv[2] : "");
        else if (what == "loads" && argc > 2) stackalign::bench::loads(argv[2]);
        else if (what == "coarse") stackalign::bench::coarse();
        else if (what == "slab") stackalign::bench::slab();
        else if (what == "gpu") {
            bench_gpu();
            bench_standard_job();
            bench_landmarks(cuda::device_count() > 0);
        }
        else {
            std::fprintf(stderr, "usage: bench cpu|gpu|strategies|landmarks|methods|stages [small|JOB]|loads CONFIG|coarse|slab\n");
            return 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench: %s\n", e.what());
        return 1;
    }
}
