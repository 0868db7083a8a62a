// `stackalign watch`: series arriving in a folder aligned once complete,
// never twice, failures reported, SIGTERM clean.
#include <doctest/doctest.h>

#include <filesystem>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "../src/core/error.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace stackalign;
using namespace test_support;

namespace {

const std::string kConfig =
    "[input]\nglob = \"incoming/*.tif\"\n[search]\nwindow = [40, 40]\nmax_shift = 12\n[alignment]\n"
    "cosine_stretch = false\n[output]\ndir = \"out\"\nreport = false\n[device]\nbackend = \"cpu\"\n";

int shell(const std::string& script) {
    const int rc = std::system(("bash -c '" + script + "'").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int count_lines(const std::string& text) { return int(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST_CASE("watch: a series copied in two halves is aligned once complete, a later one too; SIGTERM stops it; a restart redoes nothing") {
    const std::string dir = temp_dir("watch_arrivals");
    const std::string series = source_path("sample_data/haadf_tilt_91x64x64.tif");
    fs::create_directories(dir + "/incoming");
    write_text(dir + "/watch.toml", kConfig);
    // The first half, then (a second later, within the 2 s settle time) the
    // rest; then a second series; wait for each run.json; then SIGTERM.
    const std::string wait_for = "for i in $(seq 150); do [ -f $1 ] && break; sleep 0.2; done";
    const std::string script =
        "cd " + dir + " && head -c 300000 " + series + " > incoming/a.tif && (" + cli_path() +
        " watch --settle-seconds 2 --poll-seconds 0.2 watch.toml > watch.log 2>&1 & pid=$!; sleep 1; tail -c +300001 " +
        series + " >> incoming/a.tif; w() { " + wait_for + "; }; w out/a/run.json; cp " + series +
        " incoming/b.tif; w out/b/run.json; kill -TERM $pid; wait $pid; echo $? > rc.txt)";
    REQUIRE(shell(script) == 0);
    const int rc = std::atoi(read_text(dir + "/rc.txt").c_str());
    CHECK((rc == 0 || rc == int(ExitCode::interrupted)));
    const std::string log = read_text(dir + "/watch.log");
    INFO(log);
    CHECK(log.find("a: failed") == std::string::npos);  // never taken half-written
    for (const char* name : {"a", "b"}) {
        const auto j = nlohmann::json::parse(read_text(dir + "/out/" + name + "/run.json"));
        CHECK(j["input"]["frames"] == 91);
        CHECK(j["quality"]["verdict"] == "ok");
    }
    const std::string quality = read_text(dir + "/out/series_quality.csv");
    CHECK(count_lines(quality) == 3);
    CHECK(quality.find("\"a\",ok,ok,") != std::string::npos);
    // A restart finds both done: nothing is aligned again.
    const auto before = fs::last_write_time(dir + "/out/a/run.json");
    REQUIRE(shell("cd " + dir + " && " + cli_path() + " watch --once watch.toml > again.log 2>&1") == 0);
    CHECK(fs::last_write_time(dir + "/out/a/run.json") == before);
    const std::string again = read_text(dir + "/again.log");
    CHECK(again.find("a: outputs in out/a are up to date") != std::string::npos);
    CHECK(again.find("aligning") == std::string::npos);
}

TEST_CASE("watch: a broken series is reported and the others aligned; a config without [input] glob is refused") {
    const std::string dir = temp_dir("watch_failure");
    fs::create_directories(dir + "/incoming");
    write_text(dir + "/watch.toml", kConfig);
    write_text(dir + "/incoming/bad.tif", "not a tiff");
    fs::copy_file(source_path("sample_data/haadf_tilt_91x64x64.tif"), dir + "/incoming/good.tif");
    REQUIRE(shell("cd " + dir + " && " + cli_path() + " watch --once watch.toml > watch.log 2>&1") == 0);
    const std::string quality = read_text(dir + "/out/series_quality.csv");
    INFO(quality);
    CHECK(quality.find("\"bad\",failed,,") != std::string::npos);
    CHECK(quality.find("bad.tif") != std::string::npos);
    CHECK(quality.find("\"good\",ok,ok,") != std::string::npos);
    // --fail-on with --once: a failed verdict exits 9 (none here: good is ok).
    CHECK(shell("cd " + dir + " && " + cli_path() + " watch --once --fail-on suspect watch.toml > /dev/null 2>&1") == 0);
    write_text(dir + "/one.toml", "[input]\nstack = \"incoming/good.tif\"\n[output]\ndir = \"one\"\n");
    CHECK(shell("cd " + dir + " && " + cli_path() + " watch --once one.toml > /dev/null 2>&1") == int(ExitCode::config));
}

TEST_CASE("watch: series waiting at one look run as a batch runs them, two at once, with the batch's results") {
    const std::string dir = temp_dir("watch_backlog");
    fs::create_directories(dir + "/incoming");
    write_text(dir + "/watch.toml", kConfig);
    std::string batch = kConfig;
    batch.replace(batch.find("dir = \"out\""), 11, "dir = \"batch\"");
    write_text(dir + "/batch.toml", batch);
    for (const char* name : {"a", "b", "c"})
        fs::copy_file(source_path("sample_data/haadf_tilt_91x64x64.tif"), dir + "/incoming/" + name + ".tif");
    REQUIRE(shell("cd " + dir + " && " + cli_path() + " watch --once watch.toml > watch.log 2>&1") == 0);
    REQUIRE(shell("cd " + dir + " && " + cli_path() + " run --jobs-at-once 1 batch.toml > batch.log 2>&1") == 0);
    const std::string log = read_text(dir + "/watch.log");
    INFO(log);
    // Two at once: each job's lines carry its name.
    CHECK(log.find("a: aligning") != std::string::npos);
    CHECK(log.find("3 series handled") != std::string::npos);
    for (const char* name : {"a", "b", "c"})
        CHECK(read_text(dir + "/out/" + std::string(name) + "/shifts.csv") ==
              read_text(dir + "/batch/" + std::string(name) + "/shifts.csv"));
    CHECK(count_lines(read_text(dir + "/out/series_quality.csv")) == 4);
}

TEST_CASE("watch: a series complete while another is aligned starts at once on a free worker") {
    const std::string dir = temp_dir("watch_live");
    fs::create_directories(dir + "/incoming");
    write_text(dir + "/watch.toml", kConfig);
    // A long series (300 frames of the real embryo, cut along a walk) and a
    // short one that arrives once the long one is under way.
    std::vector<RawFrame> frames;
    for (int k = 0; k < 300; ++k)
        frames.push_back(crop(sample_frame("sample_data/drosophila_embryo_13x512x512.tif", k % 13), 100 + k % 7, 120 + k % 5,
                              256, 256));
    write_tiff_stack(dir + "/long.tif", frames);
    const std::string wait_for = "for i in $(seq 300); do [ -f $1 ] && break; sleep 0.1; done";
    const std::string script =
        "cd " + dir + " && (" + cli_path() +
        " watch --settle-seconds 0.2 --poll-seconds 0.05 watch.toml > watch.log 2>&1 & pid=$!; mv long.tif incoming/a.tif; "
        "for i in $(seq 100); do grep -q \"a: aligning\" watch.log && break; sleep 0.05; done; cp " +
        source_path("sample_data/haadf_tilt_91x64x64.tif") + " incoming/b.tif; w() { " + wait_for +
        "; }; w out/b/run.json; w out/a/run.json; kill -TERM $pid; wait $pid; echo $? > rc.txt)";
    REQUIRE(shell(script) == 0);
    const std::string log = read_text(dir + "/watch.log");
    INFO(log);
    const auto a_done = log.find("watch: a: ok"), b_done = log.find("watch: b: ok");
    REQUIRE(a_done != std::string::npos);
    REQUIRE(b_done != std::string::npos);
    CHECK(b_done < a_done);  // b did not wait for a
    CHECK(count_lines(read_text(dir + "/out/series_quality.csv")) == 3);
}
