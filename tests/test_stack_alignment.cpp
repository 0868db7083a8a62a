// End to end: real frames moved by known shifts go through the whole pipeline
// (config -> read -> ... -> write) and come back as the right offsets; the
// sample job writes every output; bad input exits non-zero with nothing written.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../pipelines/stack.hpp"
#include "../src/core/error.hpp"
#include "../src/io/tiff_io.hpp"
#include "../kernels/cuda_api.hpp"
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace stackalign;
using namespace test_support;

namespace {

// Crop origins per frame; frame k shows the content moved by -(t_k - t_ref).
const std::vector<std::pair<int, int>> crop_offsets = {{0, 0}, {4, -3}, {9, -1}, {9, 6}, {-3, 10}, {-10, 8}};

std::vector<RawFrame> known_shift_series() {
    const RawFrame& f = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 8);
    std::vector<RawFrame> frames;
    for (auto [tx, ty] : crop_offsets) frames.push_back(crop(f, 160 + tx, 160 + ty, 180, 180));
    return frames;
}

std::string job_config(const std::string& input_line, const std::string& out, const std::string& extra = "") {
    return "[input]\n" + input_line + "\n[preprocess]\nmean_radius = 1\nthreshold = 20.0\nbins = 64\n" +
           "[search]\nmax_shift = 16\n" + extra + "\n[output]\ndir = \"" + out + "\"\n[device]\nbackend = \"cpu\"\n";
}

// Writes `config` as dir/job.toml and runs it in-process.
void run_quietly(const std::string& dir, const std::string& config) {
    write_text(dir + "/job.toml", config);
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    run_stack(load_config(dir + "/job.toml"), quiet);
}

struct CsvRow {
    int frame;
    double dx, dy, ndx, ndy;
};

std::vector<CsvRow> read_shifts(const std::string& path) {
    std::istringstream in(read_text(path));
    std::string line;
    std::getline(in, line);
    CHECK(line == "frame,dx,dy,neighbour_dx,neighbour_dy,mi,sharpness,confidence,tilt,status");
    std::vector<CsvRow> rows;
    while (std::getline(in, line)) {
        CsvRow r{};
        char c;
        std::istringstream l(line);
        l >> r.frame >> c >> r.dx >> c >> r.dy >> c >> r.ndx >> c >> r.ndy;
        rows.push_back(r);
    }
    return rows;
}


}  // namespace

TEST_CASE("e2e: a real series moved by known integer shifts is recovered exactly") {
    const std::string dir = temp_dir("e2e_known");
    const std::vector<RawFrame> frames = known_shift_series();
    write_tiff_stack(dir + "/series.tif", frames);
    run_quietly(dir, job_config("stack = \"series.tif\"", "out", "subpixel = false\n"));

    const auto rows = read_shifts(dir + "/out/shifts.csv");
    REQUIRE(rows.size() == frames.size());
    const int ref = int(frames.size()) / 2;  // "middle"
    for (std::size_t k = 0; k < rows.size(); ++k) {
        CAPTURE(k);
        CHECK(rows[k].dx == -(crop_offsets[k].first - crop_offsets[ref].first));
        CHECK(rows[k].dy == -(crop_offsets[k].second - crop_offsets[ref].second));
    }
    // Aligning undoes the shifts: aligned frames equal the reference where both are covered.
    const Stack aligned = read_tiff_stack(dir + "/out/aligned.tif");
    REQUIRE(aligned.size() == int(frames.size()));
    CHECK(aligned.type() == PixelType::u8);
    const RawFrame& a_ref = aligned.frames[ref];
    for (int k : {0, 5}) CHECK(aligned.frames[k].bytes[90 * 180 + 90] == a_ref.bytes[90 * 180 + 90]);

    // IMOD .xf: the shift to apply, Fortran 4f12.7,2f12.3.
    std::istringstream xf(read_text(dir + "/out/transforms.xf"));
    std::string line;
    for (int k = 0; k <= 4; ++k) std::getline(xf, line);
    CHECK(line.size() == 72);
    CHECK(line == "   1.0000000   0.0000000   0.0000000   1.0000000     -12.000       4.000");  // frame 4: content moved by (12, -4)

    const auto j = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(j["pairs"].size() == frames.size() - 1);
    // A search this small scores every shift (coarse_to_fine = "auto"), on
    // several searchers where there are 8 threads or more.
    const std::string backend = j["backend"].get<std::string>(), searcher = "cpu (OpenMP)";
    CHECK(backend.size() >= searcher.size());
    CHECK(backend.substr(backend.size() - std::min(backend.size(), searcher.size())) == searcher);
    CHECK((j["plan"]["searchers"] == 1) == (backend == searcher));
    CHECK(j["plan"]["coarse_to_fine"] == false);
    CHECK(j["plan"]["reference"] == ref);
    for (const char* stage : {"read", "preprocess", "search", "apply", "write", "total"}) CHECK(j["seconds"].contains(stage));
    // Nothing temporary left behind.
    for (const auto& e : fs::directory_iterator(dir + "/out")) CHECK(e.path().filename().string()[0] != '.');
}

TEST_CASE("e2e: subpixel refinement stays near the integer truth, files glob sorts naturally") {
    const std::string dir = temp_dir("e2e_files");
    const std::vector<RawFrame> frames = known_shift_series();
    // Names that sort wrongly as plain strings: f2 must come before f10.
    const std::vector<int> numbers = {1, 2, 9, 10, 11, 100};
    for (std::size_t k = 0; k < frames.size(); ++k)
        write_tiff_stack(dir + "/f" + std::to_string(numbers[k]) + ".tif", {frames[k]});
    // The numbers skip (2 -> 9 -> 100): an error unless the gaps are declared intended.
    write_text(dir + "/job.toml", job_config("files = \"f*.tif\"", "out", "subpixel = true\n"));
    CHECK_THROWS_WITH_AS(run_stack(load_config(dir + "/job.toml"), RunOptions{}),
                         doctest::Contains(("6 frames are missing between " + dir + "/f2.tif and " + dir +
                                            "/f9.tif (numbers 3..8)").c_str()),
                         InputError);
    run_quietly(dir, job_config("files = \"f*.tif\"\nallow_gaps = true", "out", "subpixel = true\n"));
    const auto rows = read_shifts(dir + "/out/shifts.csv");
    REQUIRE(rows.size() == frames.size());
    for (std::size_t k = 0; k < rows.size(); ++k) {
        CHECK(std::fabs(rows[k].dx + (crop_offsets[k].first - crop_offsets[3].first)) < 0.25);
        CHECK(std::fabs(rows[k].dy + (crop_offsets[k].second - crop_offsets[3].second)) < 0.25);
    }
}

TEST_CASE("e2e: the sample config runs and writes every output") {
    const std::string dir = temp_dir("e2e_sample");
    write_text(dir + "/sample.toml", sample_config("sample_tilt_series", "out"));
    CHECK(run_cli("run --quiet --backend cpu " + dir + "/sample.toml") == 0);
    const auto rows = read_shifts(dir + "/out/shifts.csv");
    CHECK(rows.size() == 91);
    CHECK(read_tiff_stack(dir + "/out/aligned.tif").size() == 91);
    const std::string xf = read_text(dir + "/out/transforms.xf");
    CHECK(std::count(xf.begin(), xf.end(), '\n') == 91);
    const auto j = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(j["input"]["frames"] == 91);
    CHECK(run_cli("check " + dir + "/sample.toml") == 0);
}

TEST_CASE("e2e: the CUDA backend, strategy auto-tuned, writes the CPU's shifts.csv") {
    if (skip_without_gpu()) return;
    const std::string dir = temp_dir("e2e_cuda");
    write_tiff_stack(dir + "/series.tif", known_shift_series());
    write_text(dir + "/sample.toml", sample_config("sample_tilt_series", ""));
    write_text(dir + "/known.toml", job_config("stack = \"series.tif\"", "../out/sample_tilt_series", "subpixel = true\n"));
    for (const char* job : {"sample", "known"}) {
        CAPTURE(job);
        const std::string toml = dir + "/" + job + ".toml", out = dir + "/../out/sample_tilt_series";
        REQUIRE(run_cli("run --quiet --backend cpu " + toml) == 0);
        const std::string cpu = read_text(out + "/shifts.csv");
        REQUIRE(run_cli("run --verbose --backend cuda " + toml) == 0);
        CHECK(read_text(out + "/shifts.csv") == cpu);
        const auto record = nlohmann::json::parse(read_text(out + "/run.json"));
        const std::string backend = record["backend"];
        CHECK(backend.find("strategy timed on the first pair: shared") != std::string::npos);
        // The CLI's two hardware work queues, or the number this environment names.
        const char* named = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
        CHECK(record["plan"]["cuda_device_max_connections"] == (named ? named : "2"));
    }
}

TEST_CASE("e2e: a second CUDA run takes the first one's tuning from the cache file, with the same shifts.csv") {
    if (skip_without_gpu()) return;
    const std::string dir = temp_dir("e2e_tuning_cache");
    write_tiff_stack(dir + "/series.tif", known_shift_series());
    write_text(dir + "/known.toml", job_config("stack = \"series.tif\"", "out", "subpixel = true\n"));
    const std::string cache = dir + "/cache/gpu_tuning.json";
    const std::string with_cache = "STACKALIGN_TUNING_CACHE=" + cache + " ";
    auto backend_of = [&] { return nlohmann::json::parse(read_text(dir + "/out/run.json"))["backend"].get<std::string>(); };
    REQUIRE(std::system((with_cache + cli_path() + " run -q --backend cuda " + dir + "/known.toml").c_str()) == 0);
    const std::string first = backend_of(), shifts = read_text(dir + "/out/shifts.csv");
    CHECK(first.find("strategy timed on the first pair: ") != std::string::npos);
    CHECK(first.find("Parzen histograms by ") != std::string::npos);
    CHECK(first.find("(timed on the first batch: pixels ") != std::string::npos);
    const auto file = nlohmann::json::parse(read_text(cache));
    CHECK(file["entries"].size() == 2);  // the search's strategy and the Parzen histograms' way
    REQUIRE(std::system((with_cache + cli_path() + " run -q --backend cuda " + dir + "/known.toml").c_str()) == 0);
    const std::string second = backend_of();
    CHECK(second.find("strategy timed by an earlier run (" + cache + "): ") != std::string::npos);
    CHECK(second.find("(timed by an earlier run (" + cache + "): pixels ") != std::string::npos);
    CHECK(read_text(dir + "/out/shifts.csv") == shifts);
}

TEST_CASE("e2e: bad input exits with its own code and leaves no outputs") {
    const std::string dir = temp_dir("e2e_bad");
    write_text(dir + "/broken.tif", "not a tiff");
    write_text(dir + "/bad_input.toml", job_config("stack = \"broken.tif\"", "out"));
    CHECK(run_cli("run " + dir + "/bad_input.toml") == int(ExitCode::input));
    CHECK_FALSE(fs::exists(dir + "/out/run.json"));
    CHECK_FALSE(fs::exists(dir + "/out/shifts.csv"));

    write_text(dir + "/bad_key.toml", job_config("stack = \"broken.tif\"", "out", "windw = [3, 3]\n"));
    CHECK(run_cli("run " + dir + "/bad_key.toml") == int(ExitCode::config));
    CHECK(run_cli("check " + dir + "/bad_key.toml") == int(ExitCode::config));

    write_tiff_stack(dir + "/one.tif", {known_shift_series()[0]});
    write_text(dir + "/one.toml", job_config("stack = \"one.tif\"", "out"));
    CHECK(run_cli("run " + dir + "/one.toml") == int(ExitCode::input));

    write_tiff_stack(dir + "/ok.tif", known_shift_series());
    write_text(dir + "/cuda.toml", job_config("stack = \"ok.tif\"", "out"));
    if (cuda::device_count() == 0) CHECK(run_cli("run --backend cuda " + dir + "/cuda.toml") == int(ExitCode::unsupported));
    CHECK(run_cli("run --backend tpu " + dir + "/cuda.toml") == int(ExitCode::usage));
    CHECK(run_cli("frobnicate") == int(ExitCode::usage));
    CHECK(run_cli("--version") == 0);
    CHECK_FALSE(fs::exists(dir + "/out/run.json"));

    // An output folder that cannot be written is an output error, before any work.
    fs::create_directories(dir + "/ro");
    fs::permissions(dir + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
    write_text(dir + "/ro.toml", job_config("stack = \"ok.tif\"", "ro/out"));
    if (getuid() != 0) CHECK(run_cli("run " + dir + "/ro.toml") == int(ExitCode::output));  // root writes anywhere
    fs::permissions(dir + "/ro", fs::perms::owner_all);
}

namespace {
// A line of /proc/self/status in MiB ("VmRSS:", "VmHWM:").
double status_mb(const std::string& key) {
    std::istringstream status(read_text("/proc/self/status"));
    for (std::string line; std::getline(status, line);)
        if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size())) / 1024.0;
    return 0;
}
}  // namespace

// A batch runs job after job in one process, whose high-water mark would
// otherwise be the largest job's so far.
TEST_CASE("run.json: a job's peak memory is its own, not what the process held at its peak before it") {
    const std::string dir = temp_dir("peak_memory");
    write_text(dir + "/job.toml", sample_config("sample_tilt_series", dir + "/out"));
    const double before = status_mb("VmRSS:");
    {
        // 400 MB touched and given back (a mapping of its own: the allocator keeps nothing).
        const std::size_t bytes = std::size_t(400) << 20;
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED);
        std::memset(p, 1, bytes);
        CHECK(status_mb("VmHWM:") >= before + 390);
        munmap(p, bytes);
    }
    RunOptions opt;
    opt.backend = BackendRequest::cpu;
    opt.verbosity = Verbosity::quiet;
    run_stack(load_config(dir + "/job.toml"), opt);
    const auto record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    const double peak = record["peak_memory_mb"];
    MESSAGE("held before " << before << " MB, job's peak " << peak << " MB (" << record["peak_memory_of"] << ")");
    if (record["peak_memory_of"] == "job") {
        // The 91 x 64^2 sample needs a few MB; the 400 MB are not its.
        CHECK(peak < before + 200);
        CHECK(peak >= status_mb("VmRSS:") - 1);
    } else {  // no /proc/self/clear_refs here: the process's peak, said so
        CHECK(record["peak_memory_of"] == "process");
        CHECK(peak >= before + 390);
    }
}

TEST_CASE("e2e: a series streamed through a frame cache too small for one frame gives the same outputs") {
    const std::string dir = temp_dir("e2e_stream");
    write_text(dir + "/sample.toml", sample_config("sample_tilt_series", "out"));
    CHECK(run_cli("run --quiet --backend cpu " + dir + "/sample.toml") == 0);
    const std::string shifts = read_text(dir + "/out/shifts.csv"), aligned = read_text(dir + "/out/aligned.tif");
    CHECK(nlohmann::json::parse(read_text(dir + "/out/run.json"))["peak_memory_mb"].get<double>() > 0);
    CHECK(run_cli("run --quiet --backend cpu --cache-mb 0.001 " + dir + "/sample.toml") == 0);
    CHECK(read_text(dir + "/out/shifts.csv") == shifts);
    CHECK(read_text(dir + "/out/aligned.tif") == aligned);
    CHECK(nlohmann::json::parse(read_text(dir + "/out/run.json"))["frame_cache_mb"].get<double>() < 0.01);
}

namespace {

// A series held in memory, run on `backend` with and without the aligned
// stack's file: the CPU's file run's shifts.csv and aligned frames.
void check_held_stack(const std::string& backend) {
    const std::string dir = temp_dir("e2e_held_" + backend);
    const std::vector<RawFrame> series = known_shift_series();
    write_tiff_stack(dir + "/series.tif", series);
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    write_text(dir + "/file.toml", job_config("stack = \"series.tif\"", "from_file"));
    run_stack(load_config(dir + "/file.toml"), quiet);
    const std::string shifts = read_text(dir + "/from_file/shifts.csv");
    const Stack aligned = read_tiff_stack(dir + "/from_file/aligned.tif");
    auto held_input = std::make_shared<MemoryStack>();
    held_input->info = probe_stack_file(dir + "/series.tif");
    for (const RawFrame& f : series) held_input->frames.push_back(std::make_shared<const RawFrame>(f));
    for (const bool file_too : {true, false}) {
        CAPTURE(file_too);
        // held.tif names the outputs; no such file exists.
        const std::string out = std::string("held") + (file_too ? "_file" : "");
        std::string config = job_config("stack = \"held.tif\"", out);
        config.replace(config.find("backend = \"cpu\""), 15, "backend = \"" + backend + "\"");
        write_text(dir + "/held.toml", config);
        Config cfg = load_config(dir + "/held.toml");
        cfg.output.aligned = file_too;
        std::vector<RawFrame> given(series.size());
        HeldStack held{held_input, [&](int frame, const RawFrame& f) { given[frame] = f; }};
        run_stack(cfg, quiet, &held);
        CHECK(read_text(dir + "/" + out + "/shifts.csv") == shifts);
        for (std::size_t i = 0; i < series.size(); ++i) CHECK(given[i].bytes == aligned.frames[i].bytes);
        CHECK(fs::exists(dir + "/" + out + "/aligned.tif") == file_too);
        if (file_too) CHECK(read_text(dir + "/" + out + "/aligned.tif") == read_text(dir + "/from_file/aligned.tif"));
        const auto record = nlohmann::json::parse(read_text(dir + "/" + out + "/run.json"));
        CHECK(record["input"]["in_memory"] == true);
        CHECK(record["input"]["frames"] == int(series.size()));
        CHECK(!fs::exists(dir + "/held.tif"));
    }
}

}  // namespace

TEST_CASE("e2e: a series held in memory gives the file's outputs, and its aligned frames to the caller") {
    check_held_stack("cpu");
}

TEST_CASE("e2e: CUDA, a series held in memory gives the CPU's outputs and aligned frames") {
    if (skip_without_gpu()) return;
    check_held_stack("cuda");
}
