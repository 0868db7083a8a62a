// `bench stages`: the job shapes of issue #19, each run end to end through
// the CLI on every backend (cuda when a GPU is present, cpu, and auto), with
// the per-stage seconds the run wrote to its run.json. Wall time is the
// process's, start-up and GPU initialisation included: what a user waits.
//
// The frames are cut from a real Drosophila frame (sample_data/) upsampled
// 2.5x, at a random walk of integer offsets; the tilt series is that flat
// specimen foreshortened at its angles, so stretching has a slab to undo.
// The last column is the error from the known offsets. `bench stages` runs
// all shapes; `bench stages small` the X-ray-sized, drift and landmark jobs;
// `bench stages NAME` the jobs whose name starts with NAME.
//
// STAGES_BATCH=N (2 or more) adds a second table: each job and backend also
// run as a batch of N copies in one process (a config of N [[job]]s), whose
// jobs after the first pay neither the GPU's start nor its release: with one
// job at a time (--jobs-at-once 1) and with the default (two at once), the
// batch's wall time over N and each job after the first, (batch wall - the
// job's wall alone) / (N - 1): what one more series adds to a batch.
#include "stages.hpp"

#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "../kernels/cuda_api.hpp"
#include "../src/io/tiff_io.hpp"

namespace fs = std::filesystem;

namespace stackalign::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string repo(const std::string& p) {
    return std::string(STACKALIGN_SOURCE_DIR) + "/" + p;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// `frames` frames of width x height cut from the upsampled real frame at a
// random walk (steps of up to `step` px), as float32 or uint16. With
// `angles` (degrees, tilt axis along y) each frame is the flat specimen
// foreshortened by cos(angle) across the axis, as a thin slab projects.
// `offsets` gets each frame's cut in image pixels (content moved by -offset).
std::vector<RawFrame> cut_series(int frames, int width, int height, PixelType type, int step,
                                 const std::vector<double>& angles, std::vector<std::pair<double, double>>& offsets,
                                 int margin = 64) {
    const Stack src = read_tiff_stack(repo("sample_data/drosophila_embryo_13x512x512.tif"));
    const RawFrame& f = src.frames[6];
    double min_cos = 1;
    for (const double a : angles) min_cos = std::min(min_cos, std::cos(a * M_PI / 180));
    const int big_w = int(std::ceil(width / min_cos)) + 2 * margin, big_h = height + 2 * margin;
    // 2.5x: up to 1152 px with the margin fit in the 512-px source; larger
    // series see it mirrored beyond its edges (the same detail as the
    // smaller jobs, not a smoother image).
    const double scale = 0.4;
    const auto mirrored = [](double v) {
        const double m = std::fmod(v, 1022.0);
        return m > 511 ? 1022 - m : m;
    };
    std::vector<float> up(std::size_t(big_w) * big_h);
#pragma omp parallel for
    for (int y = 0; y < big_h; ++y)
        for (int x = 0; x < big_w; ++x) {
            const double sx = mirrored(x * scale), sy = mirrored(y * scale);
            const int x0 = std::min(int(sx), 510), y0 = std::min(int(sy), 510);
            const double fx = sx - x0, fy = sy - y0;
            auto p = [&](int xx, int yy) { return double(f.bytes[std::size_t(yy) * 512 + xx]); };
            up[std::size_t(y) * big_w + x] = float((1 - fy) * ((1 - fx) * p(x0, y0) + fx * p(x0 + 1, y0)) +
                                                   fy * ((1 - fx) * p(x0, y0 + 1) + fx * p(x0 + 1, y0 + 1))) *
                                                 200 +
                                             500;
        }
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> walk(-step, step);
    int ox = 0, oy = 0;
    std::vector<RawFrame> out;
    for (int k = 0; k < frames; ++k) {
        ox = std::clamp(ox + walk(rng), -margin / 2, margin / 2);
        oy = std::clamp(oy + walk(rng), -margin / 2, margin / 2);
        const double c = angles.empty() ? 1.0 : std::cos(angles[k] * M_PI / 180);
        offsets.push_back({ox * c, double(oy)});
        RawFrame fr;
        fr.type = type;
        fr.width = width;
        fr.height = height;
        fr.bytes.resize(fr.pixel_count() * (type == PixelType::f32 ? 4 : 2));
#pragma omp parallel for
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x) {
                // Specimen point u (about the big image's centre) lands at x = (u - ox)
                // c.
                const double u = (x - (width - 1) / 2.0) / c + ox + (big_w - 1) / 2.0;
                const int u0 = std::clamp(int(std::floor(u)), 0, big_w - 2);
                const double fu = u - u0;
                const float* row = &up[std::size_t(y + oy + margin) * big_w];
                const float v = float((1 - fu) * row[u0] + fu * row[u0 + 1]);
                const std::size_t i = std::size_t(y) * width + x;
                if (type == PixelType::f32)
                    reinterpret_cast<float*>(fr.bytes.data())[i] = v;
                else
                    reinterpret_cast<std::uint16_t*>(fr.bytes.data())[i] = std::uint16_t(std::lround(v));
            }
        out.push_back(std::move(fr));
    }
    return out;
}

struct Job {
    std::string name, shape;
    std::string config;  // the TOML, less [output] and [device]
    double megabytes = 0;
    std::vector<std::pair<double, double>> offsets;  // where each frame was cut (stacks)
    std::vector<double> angles;                      // tilt series: scored gauge-free
};

std::vector<double> write_angles(const std::string& path, int frames, double first, double step) {
    std::vector<double> angles;
    std::ofstream tlt(path);
    for (int k = 0; k < frames; ++k) {
        angles.push_back(first + k * step);
        tlt << angles.back() << "\n";
    }
    return angles;
}

std::vector<Job> make_jobs(const std::string& dir, const std::string& which) {
    // Only the jobs asked for are generated (the standard job's stack is 242 MB).
    auto wanted = [&](const std::string& name, bool small) {
        return which.empty() || (which == "small" ? small : name.rfind(which, 0) == 0);
    };
    std::vector<Job> jobs;
    std::vector<std::pair<double, double>> offsets;
    auto stack = [&](const std::string& name, int frames, int w, int h, PixelType type,
                     const std::vector<double>& angles = {}, int step = 3, int margin = 64) {
        offsets.clear();
        const std::vector<RawFrame> series = cut_series(frames, w, h, type, step, angles, offsets, margin);
        const std::string file = dir + "/" + name + ".tif";
        write_tiff_stack(file, series);
        if (!angles.empty()) {  // a tilt series' true offsets, for a peer run on it (bench/aretomo_acquisition.py)
            std::ofstream truth(dir + "/" + name + "_truth.csv");
            truth.precision(10);
            truth << "view,dx,dy\n";
            for (std::size_t k = 0; k < offsets.size(); ++k)  // content cut at +o appears moved by -o
                truth << k << "," << -offsets[k].first << "," << -offsets[k].second << "\n";
        }
        return double(frames) * w * h * (type == PixelType::f32 ? 4 : 2) / (1 << 20);
    };
    if (wanted("tilt series", false)) {
        Job tilt{"tilt series, stretch", "121 x 512x512 f32, +-17 px", "", 0, {}, {}};
        tilt.angles = write_angles(dir + "/tilt.tlt", 121, -60, 1);
        tilt.megabytes = stack("tilt", 121, 512, 512, PixelType::f32, tilt.angles);
        tilt.offsets = offsets;
        tilt.config =
            "[input]\nstack = \"tilt.tif\"\nangles = "
            "\"tilt.tlt\"\n[search]\nmax_shift = 17\n"
            "[alignment]\ncosine_stretch = true\n";
        jobs.push_back(tilt);
    }
    // Only when named (`bench stages acquisition`: 2 GB; `bench stages
    // "acquisition k3"`: a K3 camera's 5760 x 4092 frames, 2.9 GB).
    if (which.rfind("acquisition", 0) == 0) {
        // A cryo-ET series as the microscope saves it: 61 views of 4096^2
        // uint16 over +-60 degrees at 2, neighbours up to 30 px apart on
        // either axis (skip pairs 60); the defaults otherwise.
        const bool k3 = which == "acquisition k3";
        const int w = k3 ? 5760 : 4096, h = k3 ? 4092 : 4096;
        Job acq{k3 ? "acquisition series, K3" : "acquisition series",
                "61 x " + std::to_string(w) + "x" + std::to_string(h) + " u16, +-60 deg, steps of 30 px", "", 0, {}, {}};
        acq.angles = write_angles(dir + "/acquisition.tlt", 61, -60, 2);
        acq.megabytes = stack("acquisition", 61, w, h, PixelType::u16, acq.angles, 30, 192);
        acq.offsets = offsets;
        acq.config = "[input]\nstack = \"acquisition.tif\"\nangles = \"acquisition.tlt\"\n[search]\nmax_shift = 70\n";
        jobs.push_back(acq);
    }
    if (wanted("standard job", false)) {
        Job standard{"standard job", "121 x 1024x1024 u16, +-24 px", "", 0, {}, {}};
        standard.megabytes = stack("standard", 121, 1024, 1024, PixelType::u16);
        standard.offsets = offsets;
        standard.config =
            "[input]\nstack = \"standard.tif\"\n[preprocess]\nbins = "
            "64\n[search]\nwindow = [512, 512]\n"
            "max_shift = 24\n";
        jobs.push_back(standard);
    }
    if (wanted("X-ray", true)) {
        Job xray{"X-ray-sized projections", "91 x 144x119 f32, angles +-90", "", 0, {}, {}};
        xray.megabytes = stack("xray", 91, 144, 119, PixelType::f32);
        xray.offsets = offsets;
        write_angles(dir + "/xray.tlt", 91, -90, 2);
        xray.config = "[input]\nstack = \"xray.tif\"\nangles = \"xray.tlt\"\n";
        jobs.push_back(xray);
    }
    if (wanted("drift", true)) {
        Job drift{"drift stack", "31 x 384x384 f32", "", 0, {}, {}};
        drift.megabytes = stack("drift", 31, 384, 384, PixelType::f32);
        drift.offsets = offsets;
        drift.config = "[input]\nstack = \"drift.tif\"\n";
        jobs.push_back(drift);
    }
    if (wanted("landmarks", true)) {
        Job marks{"landmarks", "24 points, 166x83x41", "", 2 * 166.0 * 83 * 41 * 2 / (1 << 20), {}, {}};
        marks.config = "mode = \"landmarks\"\n[landmarks]\nsource = \"" +
                       repo("sample_data/fish1_pre_anatomy_41x83x166.tif") + "\"\ntarget = \"" +
                       repo("sample_data/fish1_post_anatomy_41x83x166.tif") + "\"\npoints = \"" +
                       repo("sample_data/fish1_pre_landmarks.csv") +
                       "\"\nwindow = [21, 21, 11]\nmax_shift = [8, 8, "
                       "4]\n[preprocess]\nthreshold = 10.0\n[output]\nfit = \"affine\"\n";
        jobs.push_back(marks);
        // The same points, the rigid fit refined over the whole overlap.
        Job global = marks;
        global.name = "landmarks global";
        global.config.replace(global.config.find("\n[preprocess]"), 0, "\nrefine = \"global\"");
        global.config.replace(global.config.find("fit = \"affine\""), 14, "fit = \"rigid\"");
        jobs.push_back(global);
    }
    return jobs;
}

// The [output] table's keys go under the job's own [output] when it has one.
std::string with_output(std::string config, const std::string& out_dir, const std::string& backend) {
    const std::string dir_line = "dir = \"" + out_dir + "\"\n";
    const auto at = config.find("[output]\n");
    if (at == std::string::npos)
        config += "[output]\n" + dir_line;
    else
        config.insert(at + 9, dir_line);
    // $STAGES_SEARCH: more [search] keys ("coarse_to_fine = true"), likewise
    // (stack jobs; the landmark job has no [search] table).
    const char* search = std::getenv("STAGES_SEARCH");
    if (search && *search && config.find("mode = \"landmarks\"") == std::string::npos) {
        const auto table = config.find("[search]\n");
        if (table == std::string::npos)
            config += "[search]\n" + std::string(search) + "\n";
        else
            config.insert(table + 9, std::string(search) + "\n");
    }
    // $STAGES_DEVICE: more [device] keys ("searchers = 1"), for A/B runs of one build.
    const char* device = std::getenv("STAGES_DEVICE");
    return config + "[device]\nbackend = \"" + backend + "\"\n" + (device && *device ? std::string(device) + "\n" : "");
}

// The binary timed: this build's, or $STACKALIGN (another build, for a
// before/after table from one run on one machine).
std::string stackalign_binary() {
    const char* other = std::getenv("STACKALIGN");
    return other && *other ? other : repo("build/stackalign");
}

struct Timed {
    double wall = 0;
    nlohmann::json seconds;
    std::string backend;
    bool ok = false;
    double rms = -1;  // px from the known offsets, mean removed; -1 where none are known
    double peak_mb = 0;  // the process's peak resident memory, as run.json has it
};

// RMS of shifts.csv's offsets from the known cuts (content cut at +o
// appears moved by -o), with their mean difference removed; for a tilt
// series (`angles`, axis along y) gauge-free: across the axis less the
// least-squares c + a cos t + b sin t, which no alignment of projections
// can tell (the specimen's own 3D position).
double rms_from_known(const std::string& shifts_csv, const std::vector<std::pair<double, double>>& offsets,
                      const std::vector<double>& angles = {}) {
    std::istringstream csv(slurp(shifts_csv));
    std::string line;
    std::getline(csv, line);
    std::vector<std::pair<double, double>> err;
    for (std::size_t k = 0; std::getline(csv, line) && k < offsets.size(); ++k) {
        double dx, dy;
        if (std::sscanf(line.c_str(), "%*d,%lf,%lf", &dx, &dy) == 2)
            err.push_back({dx + offsets[k].first, dy + offsets[k].second});
    }
    if (err.empty()) return -1;
    double mx = 0, my = 0, s = 0;
    for (const auto& [x, y] : err) mx += x / err.size(), my += y / err.size();
    for (auto& [x, y] : err) x -= mx, y -= my;
    if (angles.size() >= err.size()) {
        Eigen::MatrixXd basis(err.size(), 3);
        Eigen::VectorXd across(err.size());
        for (std::size_t k = 0; k < err.size(); ++k) {
            const double t = angles[k] * M_PI / 180;
            basis.row(k) << 1, std::cos(t), std::sin(t);
            across(k) = err[k].first;
        }
        const Eigen::VectorXd rest = across - basis * basis.colPivHouseholderQr().solve(across);
        for (std::size_t k = 0; k < err.size(); ++k) err[k].first = rest(k);
    }
    for (const auto& [x, y] : err) s += x * x + y * y;
    return std::sqrt(s / err.size());
}

// The CLI run on `toml` from its start to its exit: whether it succeeded,
// and its wall seconds. The previous run's output is flushed first: the
// kernel's writeback of it would otherwise throttle this run's writes (the
// write stage then varied 0.3-1.0 s for the same 507 MB).
std::pair<bool, double> run_cli_timed(const std::string& toml, const std::string& options = "") {
    ::sync();
    const auto t = Clock::now();
    const int rc = std::system((stackalign_binary() + " run --quiet " + options + " " + toml).c_str());
    return {rc == 0, std::chrono::duration<double>(Clock::now() - t).count()};
}

// A job's files' names on a backend: its name's first word and the backend.
std::string tag_of(const Job& job, const std::string& backend) {
    return job.name.substr(0, job.name.find(' ')) + "_" + backend;
}

Timed run_job(const std::string& dir, const Job& job, const std::string& backend, int repeats) {
    const std::string tag = tag_of(job, backend);
    const std::string toml = dir + "/" + tag + ".toml";
    std::ofstream(toml) << with_output(job.config, "out_" + tag, backend);
    std::vector<Timed> runs;
    for (int r = 0; r < repeats; ++r) {
        Timed one;
        std::tie(one.ok, one.wall) = run_cli_timed(toml);
        if (one.ok) {
            const auto j = nlohmann::json::parse(slurp(dir + "/out_" + tag + "/run.json"));
            one.seconds = j["seconds"];
            one.backend = j["plan"]["backend"].get<std::string>();  // "backend" describes the searchers
            one.peak_mb = j.value("peak_memory_mb", 0.0);
            if (!job.offsets.empty())
                one.rms = rms_from_known(dir + "/out_" + tag + "/shifts.csv", job.offsets, job.angles);
        }
        runs.push_back(one);
    }
    std::sort(runs.begin(), runs.end(), [](const Timed& a, const Timed& b) { return a.wall < b.wall; });
    return runs[runs.size() / 2];
}

// One job run as a batch of `copies` in one process (STAGES_BATCH), with
// `options` (--jobs-at-once): whether every job ran, and the batch's wall time.
struct BatchTimed {
    bool ok = false;
    double wall = 0;  // the whole batch, start to exit
};

BatchTimed run_batch_of(const std::string& dir, const Job& job, const std::string& backend, int copies,
                        const std::string& options) {
    const std::string tag = tag_of(job, backend) + "_batch";
    std::string config = with_output(job.config, "out_" + tag, backend);
    for (int k = 0; k < copies; ++k)
        config += "[[job]]\nname = \"copy" + std::to_string(k) + "\"\noutput = {dir = \"out_" + tag + "/copy" +
                  std::to_string(k) + "\"}\n";
    const std::string toml = dir + "/" + tag + ".toml";
    std::ofstream(toml) << config;
    BatchTimed b;
    std::tie(b.ok, b.wall) = run_cli_timed(toml, options);
    if (b.ok) b.ok = nlohmann::json::parse(slurp(dir + "/out_" + tag + "/batch.json"))["ok"].get<int>() == copies;
    return b;
}

std::string cell(const nlohmann::json& s, const char* key) {
    if (!s.contains(key)) return "";
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", s[key].get<double>());
    return b;
}

// Whether there is a GPU, asked in a child process: while this process held
// the CUDA driver open, the CLI it timed started its driver in 0.011 s, not
// 0.10 s as a lone job does, and the tilt series took 0.48-0.52 s from its
// start to its exit against 0.63-0.68 s alone (H200 host,
// `bash bench/device.sh floor`); timed while this process held the driver,
// the walls were 0.1-0.15 s short.
bool gpu_in_child() {
    const pid_t child = fork();
    if (child == 0) _exit(cuda::device_count() > 0 ? 0 : 1);
    int status = 0;
    return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

void stages(const std::string& which) {
    const std::string dir = repo("build/bench-stages");
    fs::create_directories(dir);
    fs::current_path(dir);
    const bool gpu = gpu_in_child();
    std::vector<std::string> backends;
    if (gpu) backends.push_back("cuda");
    backends.push_back("cpu");
    backends.push_back("auto");
    // STAGES_BACKENDS="cuda" (a comma list): profiling and A/B runs on the GPU
    // machine skip the CPU rows, which take most of a call's time.
    if (const char* only = std::getenv("STAGES_BACKENDS")) {
        const std::string list = std::string(",") + only + ",";
        backends.erase(std::remove_if(backends.begin(), backends.end(),
                                      [&](const std::string& b) { return list.find("," + b + ",") == std::string::npos; }),
                       backends.end());
    }
    std::printf("## Stages end to end: CLI wall time and run.json seconds, %d CPU threads%s\n\nbinary: %s\n\n",
                omp_get_max_threads(), gpu ? "" : " (no GPU here)", stackalign_binary().c_str());
    std::printf(
        "| job | shape | MB | backend | wall s | read | preprocess | "
        "search | refine | apply | write | "
        "outside the stages | RMS px from known | peak MB "
        "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    const char* batch_env = std::getenv("STAGES_BATCH");
    const int copies = batch_env ? std::atoi(batch_env) : 0;
    std::vector<std::string> batch_rows;
    for (const Job& job : make_jobs(dir, which)) {
        double best = 1e300;
        std::string best_backend;
        for (const std::string& b : backends) {
            // Big jobs once; small ones the median of three (start-up noise).
            const Timed t = run_job(dir, job, b, job.megabytes > 10 ? 1 : 3);
            if (!t.ok) {
                std::printf("| %s | %s | %.1f | %s | failed | | | | | | | | | |\n", job.name.c_str(), job.shape.c_str(),
                            job.megabytes, b.c_str());
                continue;
            }
            const double staged = t.seconds.value("total", 0.0);
            const std::string label = b == "auto" ? "auto -> " + t.backend.substr(0, t.backend.find(' ')) : b;
            char rms[32] = "";
            if (t.rms >= 0) std::snprintf(rms, sizeof rms, "%.3f", t.rms);
            std::printf(
                "| %s | %s | %.1f | %s | %.3f | %s | %s | %s | %s | %s | %s "
                "| %.3f | %s | %.0f |\n",
                job.name.c_str(), job.shape.c_str(), job.megabytes, label.c_str(), t.wall,
                cell(t.seconds, "read").c_str(), cell(t.seconds, "preprocess").c_str(),
                cell(t.seconds, "search").c_str(), cell(t.seconds, "refine").c_str(), cell(t.seconds, "apply").c_str(),
                cell(t.seconds, "write").c_str(), t.wall - staged, rms, t.peak_mb);
            if (b != "auto" && t.wall < best) best = t.wall, best_backend = b;
            if (copies >= 2 && b != "auto") {
                const BatchTimed one = run_batch_of(dir, job, b, copies, "--jobs-at-once 1");
                const BatchTimed two = run_batch_of(dir, job, b, copies, "");
                auto cells = [&](const BatchTimed& bt) {
                    char c[64] = "failed | ";
                    if (bt.ok) std::snprintf(c, sizeof c, "%.3f | %.3f", bt.wall / copies, (bt.wall - t.wall) / (copies - 1));
                    return std::string(c);
                };
                char ratio[32] = "", row[320];
                if (one.ok && two.ok) std::snprintf(ratio, sizeof ratio, "%.2fx", one.wall / two.wall);
                std::snprintf(row, sizeof row, "| %s | %s | %.3f | %s | %s | %s |\n", job.name.c_str(), b.c_str(), t.wall,
                              cells(one).c_str(), cells(two).c_str(), ratio);
                batch_rows.push_back(row);
            }
            if (b == "auto" && !best_backend.empty())
                std::printf("| | | | auto vs the faster (%s) | %+.0f %% | | | | | | | | | |\n", best_backend.c_str(),
                            100 * (t.wall / best - 1));
        }
    }
    std::printf(
        "\n'outside the stages': wall minus run.json's total (process "
        "start, GPU initialisation, exit).\n");
    if (batch_rows.empty()) return;
    std::printf("\n## The same jobs as a batch of %d copies in one process\n\n"
                "'each after the first': (batch wall - the job's wall alone) / %d, what one more series adds.\n\n"
                "| job | backend | alone, wall s | one at a time: batch wall / %d | each after the first | "
                "the default jobs at once (pipelines/batch.hpp): batch wall / %d | each after the first | one at a time / the default |\n"
                "|---|---|---|---|---|---|---|---|\n",
                copies, copies - 1, copies, copies);
    for (const std::string& row : batch_rows) std::printf("%s", row.c_str());
}

}  // namespace stackalign::bench
