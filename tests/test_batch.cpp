// Batches: [[job]] tables and [input] glob expand into isolated jobs; a bad
// series is reported and the rest run; --resume skips finished jobs;
// SIGINT/SIGTERM stop cleanly with their own exit code.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "../kernels/cuda_api.hpp"
#include "../pipelines/batch.hpp"
#include "../src/config/config.hpp"
#include "../src/core/error.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace stackalign;
using namespace test_support;

namespace {

const char* kTilt = "sample_data/haadf_tilt_91x64x64.tif";

// A small real series: views `first`.. of the HAADF tilt series.
void write_series(const std::string& path, int first, int count = 6) {
    std::vector<RawFrame> frames;
    for (int k = 0; k < count; ++k) frames.push_back(sample_frame(kTilt, first + k));
    write_tiff_stack(path, frames);
}


nlohmann::json batch_json(const std::string& dir) { return nlohmann::json::parse(read_text(dir + "/batch.json")); }

const std::string kCommon =
    "[preprocess]\nthreshold = 20.0\nbins = 32\n[search]\nwindow = [40, 40]\nmax_shift = 8\n"
    "[output]\ndir = \"out\"\nreport = false\n[device]\nbackend = \"cpu\"\n";

}  // namespace

TEST_CASE("batch: [[job]] tables inherit the top-level sections; their own keys win") {
    const std::string dir = temp_dir("batch_parse");
    write_text(dir + "/b.toml", kCommon +
                                    "[[job]]\nname = \"left\"\ninput = {stack = \"a.tif\"}\noutput = {dir = \"out/a\"}\n"
                                    "[[job]]\n[job.input]\nstack = \"b.tif\"\n[job.preprocess]\nbins = 16\n"
                                    "[job.output]\ndir = \"out/b\"\n");
    const Batch b = load_jobs(dir + "/b.toml");
    REQUIRE(b.jobs.size() == 2);
    CHECK(b.is_batch);
    CHECK(b.summary_dir == dir + "/out");
    CHECK(b.jobs[0].name == "left");
    CHECK(b.jobs[1].name == "job 2 (b)");
    CHECK(b.jobs[0].config.preprocess.bins == 32);
    CHECK(b.jobs[1].config.preprocess.bins == 16);
    CHECK(b.jobs[1].config.preprocess.threshold == 20.0);  // inherited
    CHECK(b.jobs[1].config.input.stack == dir + "/b.tif");
    CHECK(b.jobs[0].config.canonical != b.jobs[1].config.canonical);

    write_text(dir + "/same.toml", kCommon + "[[job]]\ninput = {stack = \"a.tif\"}\n[[job]]\ninput = {stack = \"b.tif\"}\n");
    CHECK_THROWS_WITH_AS(load_jobs(dir + "/same.toml"), doctest::Contains("both write to"), ConfigError);
    write_text(dir + "/typo.toml", kCommon + "[[job]]\ninput = {stack = \"a.tif\"}\n[job.serch]\nmax_shift = 3\n");
    CHECK_THROWS_WITH_AS(load_jobs(dir + "/typo.toml"), doctest::Contains("did you mean search"), ConfigError);

    // glob: one job per stack, output in <dir>/<stack name>, natural order.
    fs::create_directories(dir + "/data/s2");
    fs::create_directories(dir + "/data/s10");
    write_series(dir + "/data/s2/tilt.tif", 40);
    write_series(dir + "/data/s10/tilt.tif", 50);
    write_text(dir + "/g.toml", "[input]\nglob = \"data/*/tilt.tif\"\n" + kCommon);
    CHECK_THROWS_WITH_AS(load_jobs(dir + "/g.toml"), doctest::Contains("both write to"), ConfigError);  // same stem
    write_series(dir + "/data/s2/a2.tif", 40);
    write_series(dir + "/data/s10/a10.tif", 50);
    write_text(dir + "/g2.toml", "[input]\nglob = \"data/*/a*.tif\"\n" + kCommon);
    const Batch g = load_jobs(dir + "/g2.toml");
    REQUIRE(g.jobs.size() == 2);
    CHECK(g.jobs[0].name == "a2");  // s2 before s10: natural order
    CHECK(g.jobs[1].config.output.dir == dir + "/out/a10");
    write_text(dir + "/none.toml", "[input]\nglob = \"data/*/zz*.tif\"\n" + kCommon);
    CHECK_THROWS_WITH_AS(load_jobs(dir + "/none.toml"), doctest::Contains("none.toml:2: [input] glob: no file matches"),
                         ConfigError);
}

TEST_CASE("batch: a broken series is reported and the others run; --resume skips finished jobs") {
    const std::string dir = temp_dir("batch_run");
    write_series(dir + "/a.tif", 40);
    write_series(dir + "/c.tif", 60);
    write_text(dir + "/b.tif", "not a tiff");
    write_text(dir + "/batch.toml", kCommon + "[[job]]\ninput = {stack = \"a.tif\"}\noutput = {dir = \"out/a\"}\n"
                                              "[[job]]\ninput = {stack = \"b.tif\"}\noutput = {dir = \"out/b\"}\n"
                                              "[[job]]\ninput = {stack = \"c.tif\"}\noutput = {dir = \"out/c\"}\n");
    CHECK(run_cli("run " + dir + "/batch.toml") == int(ExitCode::batch_failed));
    nlohmann::json j = batch_json(dir + "/out");
    REQUIRE(j["jobs"].size() == 3);
    CHECK(j["ok"] == 2);
    CHECK(j["failed"] == 1);
    CHECK(j["jobs"][1]["status"] == "failed");
    CHECK(j["jobs"][1]["exit_code"] == int(ExitCode::input));
    CHECK(j["jobs"][1]["error"].get<std::string>().find("b.tif") != std::string::npos);
    CHECK(j["jobs"][2]["items"] == 6);
    CHECK(fs::exists(dir + "/out/c/run.json"));
    CHECK_FALSE(fs::exists(dir + "/out/b/run.json"));
    // Each job's verdict: in batch.json, and a row each in series_quality.csv.
    CHECK(j["jobs"][0]["quality"]["verdict"] == "ok");
    CHECK(j["jobs"][1]["quality"].is_null());
    const std::string quality = read_text(dir + "/out/series_quality.csv");
    CHECK(quality.rfind("job,status,verdict,pairs,pairs_not_ok,", 0) == 0);
    CHECK(std::count(quality.begin(), quality.end(), '\n') == 4);
    CHECK(quality.find("\n\"job 2 (b)\",failed,,") != std::string::npos);
    CHECK(quality.find("b.tif") != std::string::npos);  // a failed job's row says why

    CHECK(run_cli("run --resume " + dir + "/batch.toml") == int(ExitCode::batch_failed));
    j = batch_json(dir + "/out");
    CHECK(j["jobs"][0]["status"] == "skipped (up to date)");
    CHECK(j["jobs"][2]["status"] == "skipped (up to date)");
    CHECK(j["jobs"][1]["status"] == "failed");
    CHECK(j["jobs"][0]["quality"]["verdict"] == "ok");  // a skipped job's verdict is its run.json's

    // A changed input (and a repaired one) run again; the untouched job stays skipped.
    write_series(dir + "/c.tif", 61);
    write_series(dir + "/b.tif", 70);
    CHECK(run_cli("run --resume " + dir + "/batch.toml") == 0);
    j = batch_json(dir + "/out");
    CHECK(j["jobs"][0]["status"] == "skipped (up to date)");
    CHECK(j["jobs"][1]["status"] == "ok");
    CHECK(j["jobs"][2]["status"] == "ok");
    // A changed config runs again too.
    std::string cfg = read_text(dir + "/batch.toml");
    cfg.replace(cfg.find("bins = 32"), 9, "bins = 31");
    write_text(dir + "/batch.toml", cfg);
    CHECK(run_cli("run --resume " + dir + "/batch.toml") == 0);
    CHECK(batch_json(dir + "/out")["skipped"] == 0);
}

TEST_CASE("batch: jobs at once (--jobs-at-once) give the results of one at a time; their lines carry the job's name") {
    const std::string dir = temp_dir("batch_at_once");
    std::string jobs = kCommon;
    for (int k = 0; k < 5; ++k) {
        write_series(dir + "/s" + std::to_string(k) + ".tif", 20 + 12 * k);
        jobs += "[[job]]\nname = \"series" + std::to_string(k) + "\"\ninput = {stack = \"s" + std::to_string(k) +
                ".tif\"}\noutput = {dir = \"out/s" + std::to_string(k) + "\"}\n";
    }
    write_text(dir + "/batch.toml", jobs);
    std::string csv[3][5];
    const char* options[3] = {"--jobs-at-once 1", "", "--jobs-at-once 3"};
    for (int run = 0; run < 3; ++run) {
        CAPTURE(options[run]);
        const std::string cmd = cli_path() + " run " + options[run] + " " + dir + "/batch.toml 2> " + dir + "/log.txt";
        CHECK(std::system(cmd.c_str()) == 0);
        const nlohmann::json j = batch_json(dir + "/out");
        CHECK(j["ok"] == 5);
        CHECK(j["jobs_at_once"] == (run == 0 ? 1 : run == 1 ? 2 : 3));
        for (int k = 0; k < 5; ++k) {
            CHECK(j["jobs"][k]["name"] == "series" + std::to_string(k));  // the config's order, whichever finished first
            csv[run][k] = read_text(dir + "/out/s" + std::to_string(k) + "/shifts.csv");
            CHECK(csv[run][k] == csv[0][k]);
            // Jobs at once share the process's high-water mark, and say so.
            const auto record = nlohmann::json::parse(read_text(dir + "/out/s" + std::to_string(k) + "/run.json"));
            if (run > 0) CHECK(record["peak_memory_of"] == "process");
        }
        // Each job's closing line names it when jobs run at once, and only then.
        const std::string log = read_text(dir + "/log.txt");
        for (int k = 0; k < 5; ++k) {
            const std::string named = "stackalign: series" + std::to_string(k) + ": done in ";
            CHECK((log.find(named) != std::string::npos) == (run > 0));
        }
        CHECK((log.find("\nstackalign: done in ") != std::string::npos) == (run == 0));
    }
    CHECK(run_cli("run --jobs-at-once 0 " + dir + "/batch.toml") == int(ExitCode::usage));
}

TEST_CASE("batch: series of a GiB and more run up to four at once, as many as the host's memory holds twice") {
    const std::uintmax_t gib = std::uintmax_t(1) << 30;
    CHECK(jobs_at_once_for(0, 128 * gib) == kJobsAtOnce);             // unknown size: the default
    CHECK(jobs_at_once_for(gib - 1, 128 * gib) == kJobsAtOnce);       // below a GiB: the default
    CHECK(jobs_at_once_for(2 * gib, 128 * gib) == kJobsAtOnceLarge);  // 61 x 4096^2 uint16 on the H200 host
    CHECK(jobs_at_once_for(2 * gib, 24 * gib) == 3);                  // 3 x 2 x 2 GiB within half of 24
    CHECK(jobs_at_once_for(2 * gib, 16 * gib) == kJobsAtOnce);        // never fewer than the default
    CHECK(jobs_at_once_for(2 * gib, 0) == kJobsAtOnce);               // memory unknown
    CHECK(jobs_at_once_for(2 * gib, 64 * gib, 2) == kJobsAtOnceLarge);  // two GPUs: 8 jobs, 32 GiB
    CHECK(jobs_at_once_for(2 * gib, 48 * gib, 2) == 3);               // 6 jobs x 2 x 2 GiB within 24
}

TEST_CASE("interrupts: SIGINT or SIGTERM stops between pairs, exits 130, leaves no run.json") {
    const std::string dir = temp_dir("batch_signal");
    // A long job: the real Drosophila stack, 6561 candidates per pair, all
    // of them scored, one pair at a time (a 16-core host's searchers at once
    // finished the coarse-to-fine job before the signal).
    const std::string job = "[input]\nstack = \"" + source_path("sample_data/drosophila_embryo_13x512x512.tif") +
                            "\"\n[search]\nwindow = [400, 400]\nmax_shift = 40\ncoarse_to_fine = false\n"
                            "[output]\ndir = \"out/one\"\n[device]\nbackend = \"cpu\"\nsearchers = 1\n";
    write_text(dir + "/one.toml", job);
    // Three jobs, two at once (the default): the two at work are interrupted, the third never starts.
    write_text(dir + "/two.toml", job.substr(0, job.find("[output]")) + "[device]\nbackend = \"cpu\"\nsearchers = 1\n"
                                  "[[job]]\noutput = {dir = \"out/j1\"}\n[[job]]\noutput = {dir = \"out/j2\"}\n"
                                  "[[job]]\noutput = {dir = \"out/j3\"}\n");
    for (const char* signal : {"INT", "TERM"}) {
        CAPTURE(signal);
        const bool batch = std::string(signal) == "TERM";
        const std::string cfg = dir + (batch ? "/two.toml" : "/one.toml");
        const std::string script = "cd " + dir + " && ( " + cli_path() + " run -q " + cfg +
                                   " 2>/dev/null & pid=$!; sleep 0.7; kill -" + signal + " $pid; wait $pid; echo $? > rc.txt )";
        REQUIRE(std::system(script.c_str()) == 0);
        CHECK(std::atoi(read_text(dir + "/rc.txt").c_str()) == int(ExitCode::interrupted));
        for (const char* out : {"out/one", "out/j1", "out/j2", "out/j3"}) CHECK_FALSE(fs::exists(dir + "/" + out + "/run.json"));
        if (batch) {
            const nlohmann::json j = batch_json(dir + "/out");
            CHECK(j["interrupted"] == true);
            CHECK(j["jobs"][0]["status"] == "interrupted");
            CHECK(j["jobs"][1]["status"] == "interrupted");
            CHECK(j["jobs"][2]["status"] == "not run (interrupted)");
        }
        for (const auto& e : fs::recursive_directory_iterator(dir + "/out"))
            CHECK(e.path().filename().string().find(".partial-") == std::string::npos);  // write_atomically's temporaries
    }
}

TEST_CASE("shards: --shard K/N and Slurm array variables slice the job list; merge-summary joins the shards") {
    CHECK(shard_from("2/3").k == 2);
    CHECK(shard_from("2/3").n == 3);
    CHECK_FALSE(shard_from("").active());
    for (const char* bad : {"2-3", "0/3", "4/3", "a/3", "2/3x"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(shard_from(bad), ConfigError);
    }
    // As Slurm sets them for `sbatch --array=3-6`: task 5 is the third of four.
    setenv("SLURM_ARRAY_TASK_COUNT", "4", 1);
    setenv("SLURM_ARRAY_TASK_ID", "5", 1);
    setenv("SLURM_ARRAY_TASK_MIN", "3", 1);
    const Shard s = shard_from("");
    CHECK(s.k == 3);
    CHECK(s.n == 4);
    CHECK(shard_from("1/2").k == 1);  // the command line wins

    Batch b;
    for (int i = 0; i < 7; ++i) b.jobs.push_back({"j" + std::to_string(i), Config{}, ""});
    std::vector<int> seen(7, 0);
    for (int k = 1; k <= 3; ++k)
        for (const Job& j : select_shard(b, {k, 3}).jobs) ++seen[std::stoi(j.name.substr(1))];
    CHECK(seen == std::vector<int>(7, 1));

    const std::string dir = temp_dir("batch_shards");
    std::string jobs = kCommon;
    for (const char* name : {"a", "b", "c"}) {
        write_series(dir + "/" + name + ".tif", 40 + 5 * (name[0] - 'a'));
        jobs += std::string("[[job]]\ninput = {stack = \"") + name + ".tif\"}\noutput = {dir = \"out/" + name + "\"}\n";
    }
    write_text(dir + "/batch.toml", jobs);
    // Shard 1 of 2 from Slurm's variables (task 7 of an array 7-8), shard 2 from the flag.
    setenv("SLURM_ARRAY_TASK_COUNT", "2", 1);
    setenv("SLURM_ARRAY_TASK_ID", "7", 1);
    setenv("SLURM_ARRAY_TASK_MIN", "7", 1);
    CHECK(run_cli("run " + dir + "/batch.toml") == 0);
    unsetenv("SLURM_ARRAY_TASK_COUNT");
    unsetenv("SLURM_ARRAY_TASK_ID");
    unsetenv("SLURM_ARRAY_TASK_MIN");
    CHECK(run_cli("run --shard 2/2 " + dir + "/batch.toml") == 0);
    const nlohmann::json s1 = nlohmann::json::parse(read_text(dir + "/out/batch-shard-1-of-2.json"));
    const nlohmann::json s2 = nlohmann::json::parse(read_text(dir + "/out/batch-shard-2-of-2.json"));
    CHECK(s1["jobs"].size() == 2);  // jobs 1 and 3
    CHECK(s2["jobs"].size() == 1);
    for (const char* name : {"a", "b", "c"}) CHECK(fs::exists(dir + "/out/" + name + "/run.json"));
    const std::vector<JobOutcome> all = merge_summaries({dir + "/out"});
    CHECK(all.size() == 3);
    CHECK(run_cli("merge-summary " + dir + "/out") == 0);
    CHECK(run_cli("merge-summary " + dir + "/nowhere") == int(ExitCode::input));
    // A shard with no job (more shards than jobs) still records its jobs at
    // once: the one asked for, else the default.
    for (const std::string& at_once : {std::string(" --jobs-at-once 3"), std::string()}) {
        CAPTURE(at_once);
        CHECK(run_cli("run --shard 4/4" + at_once + " " + dir + "/batch.toml") == 0);
        const nlohmann::json s4 = nlohmann::json::parse(read_text(dir + "/out/batch-shard-4-of-4.json"));
        CHECK(s4["jobs"].empty());
        CHECK(s4["jobs_at_once"] == (at_once.empty() ? kJobsAtOnce : 3));
    }
}

TEST_CASE("multi-GPU: [device] gpus parses; jobs spread over the GPUs give the one-GPU results") {
    const std::string dir = temp_dir("batch_gpus");
    write_text(dir + "/a.toml", "[input]\nstack = \"a.tif\"\n[device]\ngpus = \"all\"\n");
    CHECK(load_config(dir + "/a.toml").device.gpus == std::vector<int>{-1});
    write_text(dir + "/b.toml", "[input]\nstack = \"a.tif\"\n[device]\ngpus = [0, 1]\n");
    CHECK(load_config(dir + "/b.toml").device.gpus == std::vector<int>{0, 1});
    // One GPU in the list is the job's; naming another as gpu is an error, the same one is not.
    write_text(dir + "/one.toml", "[input]\nstack = \"a.tif\"\n[device]\ngpu = 0\ngpus = [1]\n");
    CHECK_THROWS_WITH_AS(load_config(dir + "/one.toml"),
                         doctest::Contains("one.toml:5: [device] gpus: names GPU 1 but [device] gpu = 0; give one of them"),
                         ConfigError);
    write_text(dir + "/same.toml", "[input]\nstack = \"a.tif\"\n[device]\ngpu = 1\ngpus = [1]\n");
    CHECK(load_config(dir + "/same.toml").device.gpu == 1);
    write_text(dir + "/listed.toml", "[input]\nstack = \"a.tif\"\n[device]\ngpus = [1]\n");
    CHECK(load_config(dir + "/listed.toml").device.gpu == 1);
    write_text(dir + "/c.toml", "[input]\nstack = \"a.tif\"\n[device]\ngpus = 2\n");
    CHECK_THROWS_WITH_AS(load_config(dir + "/c.toml"), doctest::Contains("c.toml:4: [device] gpus: expected \"all\""),
                         ConfigError);
    if (skip_without_gpu()) return;
    std::string jobs = kCommon.substr(0, kCommon.find("[device]"));
    for (int k = 0; k < 4; ++k) {
        write_series(dir + "/s" + std::to_string(k) + ".tif", 30 + 10 * k);
        jobs += "[[job]]\ninput = {stack = \"s" + std::to_string(k) + ".tif\"}\noutput = {dir = \"out/s" +
                std::to_string(k) + "\"}\n";
    }
    std::string csv[2][4];
    for (int run = 0; run < 2; ++run) {
        write_text(dir + "/batch.toml", jobs + "[device]\nbackend = \"cuda\"\ngpus = " + (run ? "\"all\"" : "[0]") + "\n");
        CHECK(run_cli("run " + dir + "/batch.toml") == 0);
        for (int k = 0; k < 4; ++k) csv[run][k] = read_text(dir + "/out/s" + std::to_string(k) + "/shifts.csv");
    }
    for (int k = 0; k < 4; ++k) CHECK(csv[1][k] == csv[0][k]);

    // One series: its pairs split over the GPUs give the one-GPU shifts.
    std::vector<RawFrame> frames;
    for (int k = 0; k < 12; ++k) frames.push_back(sample_frame(kTilt, 30 + k));
    write_tiff_stack(dir + "/long.tif", frames);
    std::string one[2];
    for (int run = 0; run < 2; ++run) {
        write_text(dir + "/long.toml", "[input]\nstack = \"long.tif\"\n" + kCommon.substr(0, kCommon.find("[device]")) +
                                           "[device]\nbackend = \"cuda\"\ngpus = " + (run ? "\"all\"" : "[0]") + "\n");
        CHECK(run_cli("run " + dir + "/long.toml") == 0);
        one[run] = read_text(dir + "/out/shifts.csv");
    }
    CHECK(one[1] == one[0]);

    // One job given one GPU by `gpus` runs on that GPU (it ran on [device] gpu's, 0, before).
    if (cuda::device_count() < 2) return;
    write_text(dir + "/second.toml", "[input]\nstack = \"long.tif\"\n" + kCommon.substr(0, kCommon.find("[device]")) +
                                         "[device]\nbackend = \"cuda\"\ngpus = [1]\n");
    CHECK(run_cli("run " + dir + "/second.toml") == 0);
    const nlohmann::json record = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(record["plan"]["gpu"] == 1);
    CHECK(record["backend"].get<std::string>().find("GPU 1") != std::string::npos);
    CHECK(read_text(dir + "/out/shifts.csv") == one[0]);
}
