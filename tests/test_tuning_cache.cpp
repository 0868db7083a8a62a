// The GPU tuning cache (src/core/tuning_cache.hpp) and the once-per-key
// choice that reads and writes it (kernels/tuned_choice.hpp), without a GPU:
// the ways' timings are given. The CUDA searcher's use of it end to end is
// in test_stack_alignment.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "../kernels/refine/refine.hpp"
#include "../kernels/tuned_choice.hpp"
#include "../src/core/tuning_cache.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;
namespace fs = std::filesystem;

namespace {

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* was = std::getenv(name)) was_ = std::string(was);
        if (value) setenv(name, value, 1);
        else unsetenv(name);
    }
    ~ScopedEnv() {
        if (was_) setenv(name_, was_->c_str(), 1);
        else unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> was_;
};

nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("tuning cache: where the file is, and off") {
    const ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg"), home("HOME", "/home/someone");
    {
        const ScopedEnv set("STACKALIGN_TUNING_CACHE", "/data/tuning.json");
        CHECK(tuning_cache_path() == "/data/tuning.json");
    }
    {
        const ScopedEnv off("STACKALIGN_TUNING_CACHE", "off");
        CHECK(tuning_cache_path() == "");
    }
    const ScopedEnv unset("STACKALIGN_TUNING_CACHE", nullptr);
    CHECK(tuning_cache_path() == "/tmp/xdg/stackalign/gpu_tuning.json");
    {
        const ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
        CHECK(tuning_cache_path() == "/home/someone/.cache/stackalign/gpu_tuning.json");
        const ScopedEnv no_home("HOME", nullptr);
        CHECK(tuning_cache_path() == "");
    }
}

TEST_CASE("tuning cache: an entry is read back, beside other processes' entries, and a bad file is an empty cache") {
    const std::string dir = temp_dir("tuning_cache");
    const std::string path = dir + "/sub/folder/gpu_tuning.json";  // folders made as needed
    CHECK_FALSE(recall_tuning(path, "a"));
    CHECK(remember_tuning(path, "a", {"shared", "shared 0.750 ms, zero-slot 1.760 ms"}) == "");
    CHECK(remember_tuning(path, "b", {"runs of 8", "pixels 0.130 ms, runs of 8 0.089 ms"}) == "");
    const std::optional<RememberedChoice> a = recall_tuning(path, "a");
    REQUIRE(a);
    CHECK(a->choice == "shared");
    CHECK(a->times == "shared 0.750 ms, zero-slot 1.760 ms");
    REQUIRE(recall_tuning(path, "b"));
    CHECK(recall_tuning(path, "b")->choice == "runs of 8");
    CHECK(remember_tuning(path, "a", {"replicated", "replicated 0.700 ms"}) == "");  // replaced
    CHECK(recall_tuning(path, "a")->choice == "replicated");
    CHECK(read_json(path)["entries"].size() == 2);
    // No temporary or replaced copy is left beside it.
    int files = 0;
    for (const auto& e : fs::directory_iterator(fs::path(path).parent_path())) files += e.path().extension() == ".json";
    CHECK(files == 1);

    for (const char* bad : {"{ not json", "[1, 2]", R"({"format": "something else", "entries": {"a": {"choice": "shared"}}})"}) {
        CAPTURE(bad);
        std::ofstream(path) << bad;
        CHECK_FALSE(recall_tuning(path, "a"));
        CHECK(remember_tuning(path, "c", {"shared", ""}) == "");  // replaced by a cache of one entry
        CHECK(recall_tuning(path, "c"));
        CHECK(read_json(path)["entries"].size() == 1);
    }
    CHECK_FALSE(recall_tuning("", "c"));
}

TEST_CASE("tuning cache: the oldest entries go beyond the limit; a file that cannot be written is said, not thrown") {
    const std::string path = temp_dir("tuning_cache_full") + "/gpu_tuning.json";
    nlohmann::json entries = nlohmann::json::object();
    for (int i = 0; i < kTuningCacheEntries; ++i)
        entries["old " + std::to_string(i)] = {{"choice", "shared"}, {"times", ""}, {"saved", 1000 + i}};
    std::ofstream(path) << nlohmann::json{{"format", "stackalign GPU tuning cache 1"}, {"entries", entries}}.dump();
    REQUIRE(recall_tuning(path, "old 0"));
    CHECK(remember_tuning(path, "new", {"shared", ""}) == "");
    CHECK(read_json(path)["entries"].size() == std::size_t(kTuningCacheEntries));
    CHECK_FALSE(recall_tuning(path, "old 0"));  // the oldest
    CHECK(recall_tuning(path, "old 1"));
    CHECK(recall_tuning(path, "new"));

    const std::string under_a_file = path + "/cannot/gpu_tuning.json";
    std::string why;
    CHECK_NOTHROW(why = remember_tuning(under_a_file, "a", {"shared", ""}));
    CHECK_FALSE(why.empty());
    CHECK_FALSE(recall_tuning(under_a_file, "a"));
}

TEST_CASE("tuned choice: timed once and remembered; a later process reads it instead of timing") {
    const std::string path = temp_dir("tuned_choice") + "/gpu_tuning.json";
    auto time_ways = [](TunedChoice<ParzenAdd>& t) {
        return [&t] {
            t.timed(ParzenAdd::pixels, "pixels", 0.130);
            t.timed(ParzenAdd::runs, "runs of 8", 0.089);
        };
    };
    const auto any = [](ParzenAdd way) { return way != ParzenAdd::automatic; };
    {
        TunedChoice<ParzenAdd> first;
        choose_once<ParzenAdd>(first, path, "Parzen | some GPU | 478 478 1 32", any, time_ways(first));
        CHECK(first.done);
        CHECK(first.choice == ParzenAdd::runs);
        CHECK(first.remembered == "");
        CHECK(first.how("batch") == "timed on the first batch: pixels 0.130 ms, runs of 8 0.089 ms");
        REQUIRE(recall_tuning(path, "Parzen | some GPU | 478 478 1 32"));
        CHECK(recall_tuning(path, "Parzen | some GPU | 478 478 1 32")->choice == "runs of 8");
    }
    {  // a later process: the choice is read, nothing is timed
        TunedChoice<ParzenAdd> later;
        int timings = 0;
        choose_once<ParzenAdd>(later, path, "Parzen | some GPU | 478 478 1 32", any, [&] { ++timings; });
        CHECK(timings == 0);
        CHECK(later.choice == ParzenAdd::runs);
        CHECK(later.remembered == path);
        CHECK(later.how("batch") == "timed by an earlier run (" + path + "): pixels 0.130 ms, runs of 8 0.089 ms");
        choose_once<ParzenAdd>(later, path, "Parzen | some GPU | 478 478 1 32", any, [&] { ++timings; });
        CHECK(timings == 0);  // made once
    }
    {  // a remembered way this build no longer takes is timed again, and the entry replaced
        TunedChoice<ParzenAdd> strict;
        choose_once<ParzenAdd>(strict, path, "Parzen | some GPU | 478 478 1 32",
                               [](ParzenAdd way) { return way == ParzenAdd::pixels; },
                               [&] { strict.timed(ParzenAdd::pixels, "pixels", 0.2); });
        CHECK(strict.choice == ParzenAdd::pixels);
        CHECK(strict.remembered == "");
        CHECK(recall_tuning(path, "Parzen | some GPU | 478 478 1 32")->choice == "pixels");
    }
    {  // a file that cannot be written: timed, and run.json says why it is not remembered
        TunedChoice<ParzenAdd> t;
        choose_once<ParzenAdd>(t, path + "/not/a/folder.json", "Parzen | some GPU | 478 478 1 32", any, time_ways(t));
        CHECK(t.choice == ParzenAdd::runs);
        CHECK_FALSE(t.unsaved.empty());
        CHECK(t.how("batch").find("; not remembered: ") != std::string::npos);
    }
    {  // another shape, or no key (a build that cannot be told apart), or no file: timed
        for (const auto& [cache, key] : {std::pair<std::string, std::string>{path, "Parzen | some GPU | 96 96 1 32"},
                                         {path, ""},
                                         {"", "Parzen | some GPU | 478 478 1 32"}}) {
            TunedChoice<ParzenAdd> t;
            int timings = 0;
            choose_once<ParzenAdd>(t, cache, key, any, [&] {
                ++timings;
                t.timed(ParzenAdd::pixels, "pixels", 0.1);
            });
            CHECK(timings == 1);
            CHECK(t.remembered == "");
        }
        CHECK(recall_tuning(path, "Parzen | some GPU | 96 96 1 32"));
        CHECK(read_json(path)["entries"].size() == 2);  // nothing under "" was written
    }
}

TEST_CASE("tuning cache: this build is told apart by its file") {
    const std::string id = build_identity();
    CHECK(id.rfind("0.", 0) == 0);  // the version first
    CHECK(id.find(' ') != std::string::npos);
    CHECK(build_identity() == id);
}
