// What overnight batches meet on real servers: odd paths, folders that
// cannot be written, full disks, frames missing from a numbered series.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "../src/core/error.hpp"
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

std::string job(const std::string& stack, const std::string& out) {
    return "[input]\nstack = \"" + stack + "\"\n[preprocess]\nthreshold = 20.0\nbins = 32\n[search]\n"
           "window = [40, 40]\nmax_shift = 8\n[output]\ndir = \"" + out + "\"\n[device]\nbackend = \"cpu\"\n";
}

int run_cli(const std::string& config, std::string* stderr_text = nullptr) {
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
void unmount(const std::string& dir) { std::system(("umount \"" + dir + "\" 2>/dev/null").c_str()); }

}  // namespace

TEST_CASE("hostile: paths with spaces and non-ASCII characters just work") {
    const std::string dir = temp_dir("hostile_names") + "/tilt series été €";
    fs::create_directories(dir + "/in put");
    write_series(dir + "/in put/séries 1.tif");
    write_text(dir + "/job é.toml", job("in put/séries 1.tif", "out put ü"));
    CHECK(run_cli(dir + "/job é.toml") == 0);
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
    const int rc = run_cli(dir + "/full.toml", &err);
    CHECK(rc == int(ExitCode::output));
    CHECK(err.find("No space left on device") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/full/out/run.json"));
    int partial = 0;
    for (const auto& e : fs::directory_iterator(dir + "/full/out"))
        partial += e.path().filename().string().find(".partial-") != std::string::npos;
    CHECK(partial == 0);
    unmount(dir + "/full");
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
    CHECK(run_cli(dir + "/ro.toml", &err) == int(ExitCode::output));
    CHECK(err.find("ro/out") != std::string::npos);
    if (ro) unmount(dir + "/ro");
    else fs::permissions(dir + "/ro", fs::perms::owner_all);
}
