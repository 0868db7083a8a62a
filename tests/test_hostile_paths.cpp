// What overnight batches meet on real servers: odd paths, folders that
// cannot be written, full disks, frames missing from a numbered series, and
// what must never be lost: inputs under outputs, damaged files, empty frames,
// runs killed mid-write.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "../src/core/atomic_file.hpp"
#include "../src/core/error.hpp"
#include "../src/io/mrc_io.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace stackalign;
using namespace test_support;

namespace {

const char* kTilt = "sample_data/haadf_tilt_91x64x64.tif";

void write_series(const std::string& path) {
    std::vector<RawFrame> frames;
    for (int k = 0; k < 6; ++k) frames.push_back(sample_frame(kTilt, 40 + k));
    write_tiff_stack(path, frames);
}

RawFrame as_float(const RawFrame& f) {
    const ImageF v = f.to_float();
    RawFrame out{PixelType::f32, f.width, f.height, f.depth, {}};
    out.bytes.resize(v.pixels.size() * sizeof(float));
    std::memcpy(out.bytes.data(), v.pixels.data(), out.bytes.size());
    return out;
}

std::string job(const std::string& stack, const std::string& out) {
    return "[input]\nstack = \"" + stack + "\"\n[preprocess]\nthreshold = 20.0\nbins = 32\n[search]\n"
           "window = [40, 40]\nmax_shift = 8\n[output]\ndir = \"" + out + "\"\n[device]\nbackend = \"cpu\"\n";
}

int run_config(const std::string& config, std::string* stderr_text = nullptr) {
    const std::string err = config + ".stderr";
    const std::string cmd = cli_path() + " run -q \"" + config + "\" >/dev/null 2>\"" + err + "\"";
    const int rc = std::system(cmd.c_str());
    if (stderr_text) *stderr_text = read_text(err);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// A small tmpfs at `dir` (root only): a full disk or a read-only file system
// on demand. False where mounting is not allowed.
bool mount_tmpfs(const std::string& dir, const std::string& options) {
    fs::create_directories(dir);
    return getuid() == 0 && std::system(("mount -t tmpfs -o " + options + " tmpfs \"" + dir + "\" 2>/dev/null").c_str()) == 0;
}
void unmount(const std::string& dir) {
    const int rc = std::system(("umount \"" + dir + "\" 2>/dev/null").c_str());
    (void)rc;  // a failure leaves nothing to undo: the file system was never mounted, or is gone
}

}  // namespace

TEST_CASE("hostile: paths with spaces and non-ASCII characters just work") {
    const std::string dir = temp_dir("hostile_names") + "/tilt series été €";
    fs::create_directories(dir + "/in put");
    write_series(dir + "/in put/séries 1.tif");
    write_text(dir + "/job é.toml", job("in put/séries 1.tif", "out put ü"));
    CHECK(run_config(dir + "/job é.toml") == 0);
    CHECK(fs::exists(dir + "/out put ü/run.json"));
    CHECK(fs::exists(dir + "/out put ü/séries 1.prexg"));
}

TEST_CASE("hostile: a full disk is an output error that leaves nothing looking complete") {
    const std::string dir = temp_dir("hostile_disk");
    write_series(dir + "/s.tif");
    // 16 KiB: not enough for aligned.tif (49 KB).
    if (!mount_tmpfs(dir + "/full", "size=16k")) return skip_test("no tmpfs mount here (needs root): full-disk case");
    write_text(dir + "/full.toml", job("s.tif", "full/out"));
    std::string err;
    const int rc = run_config(dir + "/full.toml", &err);
    CHECK(rc == int(ExitCode::output));
    CHECK(err.find("No space left on device") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/full/out/run.json"));
    int partial = 0;
    for (const auto& e : fs::directory_iterator(dir + "/full/out"))
        partial += e.path().filename().string().find(".partial-") != std::string::npos;
    CHECK(partial == 0);
    unmount(dir + "/full");
}

TEST_CASE("nothing lost: a rerun replaces its outputs whole, and a rerun that fails leaves the last ones as they were") {
    const std::string dir = temp_dir("rerun_outputs");
    write_series(dir + "/s.tif");
    write_text(dir + "/job.toml", job("s.tif", "out"));
    REQUIRE(run_config(dir + "/job.toml") == 0);
    const std::string first = read_text(dir + "/out/aligned.tif");
    // The same job again: the outputs are replaced, nothing is left beside them.
    REQUIRE(run_config(dir + "/job.toml") == 0);
    CHECK(read_text(dir + "/out/aligned.tif") == first);
    for (const auto& e : fs::directory_iterator(dir + "/out")) {
        CAPTURE(e.path().string());
        CHECK(e.path().filename().string().find(".partial-") == std::string::npos);
    }
    // A write that fails: the finished file there stays whole and the temporary goes.
    const std::string path = dir + "/out/aligned.tif";
    CHECK_THROWS_AS(write_atomically(path,
                                     [](const std::string& tmp) {
                                         write_text(tmp, "half");
                                         throw OutputError(tmp + ": No space left on device");
                                     }),
                    OutputError);
    CHECK(read_text(path) == first);
    // One that succeeds replaces it whole.
    write_atomically(path, [](const std::string& tmp) { write_text(tmp, "new"); });
    CHECK(read_text(path) == "new");
    int others = 0;
    for (const auto& e : fs::directory_iterator(dir + "/out"))
        others += e.path().filename().string().find(".partial-") != std::string::npos;
    CHECK(others == 0);
}

TEST_CASE("hostile: a read-only output folder is an output error naming it") {
    const std::string dir = temp_dir("hostile_ro");
    write_series(dir + "/s.tif");
    // A read-only file system stops root too (permissions do not).
    const bool ro = mount_tmpfs(dir + "/ro", "ro,size=64k");
    if (!ro && getuid() == 0) return skip_test("no read-only tmpfs mount here: read-only case");
    if (!ro) fs::permissions(dir + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
    write_text(dir + "/ro.toml", job("s.tif", "ro/out"));
    std::string err;
    CHECK(run_config(dir + "/ro.toml", &err) == int(ExitCode::output));
    CHECK(err.find("ro/out") != std::string::npos);
    if (ro) unmount(dir + "/ro");
    else fs::permissions(dir + "/ro", fs::perms::owner_all);
}

// ---- nothing lost (README: Outputs and conventions) ------------------------

TEST_CASE("nothing lost: an output that would replace an input is a config error naming both, and nothing is written") {
    const std::string dir = temp_dir("lost_replace");
    write_series(dir + "/aligned.tif");
    const std::string before = read_text(dir + "/aligned.tif");
    write_text(dir + "/job.toml", job("aligned.tif", "."));
    std::string err;
    CHECK(run_config(dir + "/job.toml", &err) == int(ExitCode::config));
    CHECK(err.find("would replace the input " + dir + "/aligned.tif") != std::string::npos);
    CHECK(err.find("job.toml:2: [input] stack") != std::string::npos);  // the input's key and line
    CHECK(read_text(dir + "/aligned.tif") == before);
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() != ".stderr";
    CHECK(files == 2);  // the input and the config: nothing written

    // Through a symbolic link and "..": the same file, the same refusal.
    fs::create_directories(dir + "/sub");
    fs::create_symlink(dir, dir + "/link");
    write_text(dir + "/sub/job.toml", job("../aligned.tif", "../link"));
    CHECK(run_config(dir + "/sub/job.toml", &err) == int(ExitCode::config));
    CHECK(err.find("would replace the input") != std::string::npos);
    CHECK(read_text(dir + "/aligned.tif") == before);
}

TEST_CASE("nothing lost: an input pattern that would read the tool's own outputs is refused before the first run") {
    const std::string dir = temp_dir("lost_glob");
    fs::create_directories(dir + "/g");
    for (int k = 0; k < 3; ++k) write_tiff_stack(dir + "/g/f" + std::to_string(k) + ".tif", {sample_frame(kTilt, 40 + k)});
    std::string text = job("x", "g");
    text.replace(text.find("stack = \"x\""), 11, "files = \"g/*.tif\"");
    write_text(dir + "/job.toml", text);
    std::string err;
    CHECK(run_config(dir + "/job.toml", &err) == int(ExitCode::config));
    CHECK(err.find("[input] files: the pattern \"" + dir + "/g/*.tif\" also matches the output " + dir +
                   "/g/aligned.tif") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/g/aligned.tif"));
    // Outputs in a folder the pattern does not reach: runs, twice, with the same answer.
    text.replace(text.find("dir = \"g\""), 9, "dir = \"g/out\"");
    write_text(dir + "/job.toml", text);
    REQUIRE(run_config(dir + "/job.toml") == 0);
    const std::string first = read_text(dir + "/g/out/shifts.csv");
    REQUIRE(run_config(dir + "/job.toml") == 0);
    CHECK(read_text(dir + "/g/out/shifts.csv") == first);

    // A batch glob whose per-stack output folders it would reach.
    write_series(dir + "/s1.tif");
    write_text(dir + "/batch.toml", "[input]\nglob = \"*/*.tif\"\n[output]\ndir = \".\"\n[search]\nwindow = [40, 40]\n"
                                    "max_shift = 8\n[device]\nbackend = \"cpu\"\n");
    fs::create_directories(dir + "/d");
    write_series(dir + "/d/s2.tif");
    CHECK(run_config(dir + "/batch.toml", &err) == int(ExitCode::config));
    CHECK(err.find("[input] glob: the pattern") != std::string::npos);
    CHECK(err.find("/s2/aligned.tif") != std::string::npos);
}

TEST_CASE("nothing lost: one job of a batch may not write over another job's input") {
    const std::string dir = temp_dir("lost_batch");
    fs::create_directories(dir + "/b");
    write_series(dir + "/a.tif");
    write_series(dir + "/b/aligned.tif");
    write_text(dir + "/batch.toml", "[search]\nwindow = [40, 40]\nmax_shift = 8\n[device]\nbackend = \"cpu\"\n"
                                    "[[job]]\ninput = {stack = \"a.tif\"}\noutput = {dir = \"b\"}\n"
                                    "[[job]]\ninput = {stack = \"b/aligned.tif\"}\noutput = {dir = \"c\"}\n");
    std::string err;
    CHECK(run_config(dir + "/batch.toml", &err) == int(ExitCode::config));
    CHECK(err.find("the output " + dir + "/b/aligned.tif would replace the input") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/c"));
}

TEST_CASE("nothing lost: damaged TIFF and MRC files are input errors that say so, with the page or section") {
    const std::string dir = temp_dir("lost_damaged");
    std::vector<RawFrame> frames;
    for (int k = 0; k < 6; ++k) frames.push_back(sample_frame(kTilt, 40 + k));
    write_tiff_stack(dir + "/s.tif", frames);
    fs::resize_file(dir + "/s.tif", fs::file_size(dir + "/s.tif") * 2 / 3);
    write_text(dir + "/job.toml", job("s.tif", "out"));
    std::string err;
    CHECK(run_config(dir + "/job.toml", &err) == int(ExitCode::input));
    CHECK(err.find(dir + "/s.tif page ") != std::string::npos);
    CHECK(err.find("damaged or truncated file") != std::string::npos);
    CHECK(err.find("complete page(s) before it") != std::string::npos);

    write_mrc_stack(dir + "/s.mrc", frames, 1, 1.0, false);
    fs::resize_file(dir + "/s.mrc", 1024 + 2 * 64 * 64 * 2 + 100);  // two whole sections and part of a third
    write_text(dir + "/mrc.toml", job("s.mrc", "out_mrc"));
    CHECK(run_config(dir + "/mrc.toml", &err) == int(ExitCode::input));
    CHECK(err.find("damaged or truncated file") != std::string::npos);
    CHECK(err.find("sections 0..1 are complete, section 2 onwards is missing") != std::string::npos);
}

TEST_CASE("nothing lost: empty, constant and non-finite frames are named in a warning and in run.json") {
    const std::string dir = temp_dir("lost_empty");
    std::vector<RawFrame> frames;
    for (int k = 0; k < 6; ++k) frames.push_back(as_float(sample_frame(kTilt, 40 + k)));
    std::fill(frames[2].bytes.begin(), frames[2].bytes.end(), 0);                 // all zero
    float* nan_frame = reinterpret_cast<float*>(frames[4].bytes.data());
    nan_frame[100] = NAN;
    nan_frame[200] = INFINITY;
    float* flat = reinterpret_cast<float*>(frames[5].bytes.data());
    std::fill(flat, flat + frames[5].pixel_count(), 7.0f);                          // constant
    write_tiff_stack(dir + "/s.tif", frames);
    write_text(dir + "/job.toml", job("s.tif", "out"));
    const std::string cmd = cli_path() + " run \"" + dir + "/job.toml\" >/dev/null 2>\"" + dir + "/log\"";
    REQUIRE(std::system(cmd.c_str()) == 0);
    const std::string log = read_text(dir + "/log");
    CHECK(log.find("warning: frame 2 (" + dir + "/s.tif): empty: every pixel is 0") != std::string::npos);
    CHECK(log.find("warning: frame 4 (" + dir + "/s.tif): 2 of 4096 pixels are NaN or infinite") != std::string::npos);
    CHECK(log.find("warning: frame 5 (" + dir + "/s.tif): constant: every pixel is 7") != std::string::npos);
    CHECK(log.find("warning: frame 1") == std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    REQUIRE(j["frame_warnings"].size() == 3);
    CHECK(j["frame_warnings"][0]["frame"] == 2);
    CHECK(j["frame_warnings"][1]["problem"] == "2 of 4096 pixels are NaN or infinite");
    CHECK(read_text(dir + "/out/report.html").find("view 5: constant: every pixel is 7") != std::string::npos);
}

TEST_CASE("nothing lost: a run killed with SIGKILL while it writes leaves no run.json and no output that looks complete") {
    const std::string dir = temp_dir("lost_kill");
    // Large enough that writing the aligned stack takes a while.
    std::vector<RawFrame> frames;
    const RawFrame big = crop(sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 0), 0, 0, 512, 512);
    for (int k = 0; k < 48; ++k) frames.push_back(big);
    write_tiff_stack(dir + "/s.tif", frames);
    write_text(dir + "/job.toml", "[input]\nstack = \"s.tif\"\n[search]\nwindow = [16, 16]\nmax_shift = 1\n"
                                  "[output]\ndir = \"out\"\nreport = false\n[device]\nbackend = \"cpu\"\n");
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const std::string cli = cli_path(), cfg = dir + "/job.toml";
        execl(cli.c_str(), cli.c_str(), "run", "-q", cfg.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    // Kill it the moment a temporary output appears.
    bool writing = false;
    for (int i = 0; i < 60000 && !writing; ++i) {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir + "/out", ec))
            writing |= e.path().filename().string().find(".partial-") != std::string::npos;
        if (!writing) {
            int status = 0;
            if (waitpid(child, &status, WNOHANG) == child) break;  // finished before it could be caught
            usleep(500);
        }
    }
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    if (!writing) return skip_test("the run finished before it could be killed while writing");
    CHECK(WIFSIGNALED(status));
    CHECK_FALSE(fs::exists(dir + "/out/run.json"));
    CHECK_FALSE(fs::exists(dir + "/out/aligned.tif"));  // only its temporary name, never a cut-off final one
    // The next run finishes and clears the dead run's temporary file.
    REQUIRE(run_config(dir + "/job.toml") == 0);
    CHECK(fs::exists(dir + "/out/run.json"));
    for (const auto& e : fs::directory_iterator(dir + "/out"))
        CHECK(e.path().filename().string().find(".partial-") == std::string::npos);
}
