// Several pair searchers at once ([device] searchers): the pairs split into
// chains outward from the reference, skips on the searcher that has both
// neighbours or after, give the one-searcher shifts bit for bit, with and
// without cosine stretching, for shifts and for rigid motion, on each backend.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "../pipelines/stack.hpp"
#include "../src/config/config.hpp"
#include "../src/config/config_reader.hpp"
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
        replace("projection_matching = false", "projection_matching = true");
    replace("[search]\n", "[search]\n" + extra_search);
    replace("backend = \"auto\"", "backend = \"" + backend + "\"\nsearchers = " + std::to_string(searchers));
    replace("report = true", "report = false");
    replace("projection_iterations = 4", "");
    replace("aligned = true", "aligned = false");
    return cfg;
}

std::string shifts_of(const std::string& dir, const std::string& cfg, int searchers) {
    write_text(dir + "/job.toml", cfg);
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    run_stack(load_config(dir + "/job.toml"), quiet);
    const nlohmann::json j = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(j["plan"]["searchers"].get<int>() == searchers);
    return read_text(dir + "/out/shifts.csv");
}

}  // namespace

TEST_CASE("searchers: pairs split between several searchers give one searcher's shifts.csv, byte for byte") {
    struct Case {
        const char* name;
        std::string alignment, search;
    };
    const Case cases[] = {
        {"unstretched", "cosine_stretch = false", ""},
        // The higher-tilt view is stretched about its placed neighbour: two
        // chains from the reference; the skip across it comes after both. A
        // reference at -50 degrees, so that stretch is far from 1.
        {"stretched", "cosine_stretch = true\nreference = 20", ""},
        {"stretch auto", "cosine_stretch = \"auto\"\nreference = 20", ""},
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
            const std::string one = shifts_of(dir, tilt_config(c.alignment, c.search, backend, 1), 1);
            const std::string three = shifts_of(dir, tilt_config(c.alignment, c.search, backend, 3), 3);
            CHECK(one.size() > 1000);
            CHECK(three == one);
        }
}
