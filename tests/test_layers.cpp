// The layers of the source tree, checked: every #include "..." in src/,
// kernels/, pipelines/ and the front ends (cli/, python/) points at the same
// layer or one below it, so the front ends sit on top and nothing under them
// reaches back up (docs/architecture.md). The table has no exceptions.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "test_support.hpp"

namespace fs = std::filesystem;

namespace {

// What each layer may include besides itself.
const std::map<std::string, std::set<std::string>> allowed = {
    {"src/core", {}},
    {"src/io", {"src/core"}},
    {"src/alignment", {"src/core", "src/io"}},
    {"src/config", {"src/core", "src/io", "src/alignment"}},
    {"src/output", {"src/core", "src/io", "src/alignment"}},
    {"kernels", {"src/core", "src/alignment"}},
    {"pipelines", {"src/core", "src/io", "src/alignment", "src/config", "src/output", "kernels"}},
    {"cli", {"src/core", "src/io", "src/alignment", "src/config", "src/output", "kernels", "pipelines"}},
    {"python", {"src/core", "src/io", "src/alignment", "src/config", "src/output", "kernels", "pipelines"}},
};

std::string layer_of(const fs::path& relative) {
    const std::string p = relative.generic_string();
    for (const auto& [layer, _] : allowed)
        if (p.rfind(layer + "/", 0) == 0) return layer;
    return "";
}

}  // namespace

TEST_CASE("layers: no include runs from a lower layer to a higher one") {
    const fs::path root = test_support::source_path("");
    const std::regex include("^\\s*#\\s*include\\s+\"([^\"]+)\"");
    int checked = 0;
    for (const char* top : {"src", "kernels", "pipelines", "cli", "python"}) {
        for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
            if (!entry.is_regular_file()) continue;
            const std::string ext = entry.path().extension().string();
            if (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh") continue;
            const fs::path file = fs::relative(entry.path(), root);
            const std::string from = layer_of(file);
            INFO(file.generic_string());
            REQUIRE_MESSAGE(!from.empty(), "a source file outside every layer: add its folder to the table above");
            std::ifstream in(entry.path());
            std::string line;
            while (std::getline(in, line)) {
                std::smatch m;
                if (!std::regex_search(line, m, include)) continue;
                const fs::path target = fs::relative(fs::weakly_canonical(entry.path().parent_path() / m[1].str()), root);
                const std::string to = layer_of(target);
                INFO("includes " << target.generic_string());
                CHECK_MESSAGE((to == from || allowed.at(from).count(to)), from << " may not include " << to);
                ++checked;
            }
        }
    }
    CHECK(checked > 100);
}
