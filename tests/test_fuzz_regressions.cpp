// Every seed and every input that ever crashed a fuzzer (tests/fuzz/) goes
// through its reader again: an error naming the problem is fine, anything
// else fails here.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz/fuzz_targets.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

TEST_CASE("fuzz regressions: seeds and saved crashers of every reader are handled") {
    int replayed = 0;
    for (const char* target : {"tiff", "mrc", "config", "points"}) {
        for (const char* kind : {"corpus", "crashers"}) {
            const fs::path dir = fs::path(test_support::source_path("tests/fuzz")) / kind / target;
            if (!fs::exists(dir)) continue;
            for (const auto& e : fs::directory_iterator(dir)) {
                std::ifstream in(e.path(), std::ios::binary);
                const std::vector<std::uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                CAPTURE(e.path().string());
                CHECK_NOTHROW(fuzz::run(target, data.data(), data.size()));
                ++replayed;
            }
        }
    }
    CHECK(replayed >= 12);  // the seeds at least
}
