#include "provenance.hpp"

#include "../../src/io/mdoc.hpp"

#include <glob.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "../../src/config/schema.hpp"
#include "../../src/core/error.hpp"
#include "output_names.hpp"

namespace fs = std::filesystem;

namespace stackalign {
namespace {
// FNV-1a, 64 bits: change detection, not security.
void mix(std::uint64_t& h, const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // separator, so "ab"+"c" != "a"+"bc"
}
}  // namespace

std::string job_fingerprint(const Config& cfg) {
    std::uint64_t h = 1469598103934665603ull;
    mix(h, cfg.canonical);
    std::vector<std::string> inputs = {cfg.input.stack, cfg.input.angles_file, cfg.landmarks.source,
                                       cfg.landmarks.target, cfg.landmarks.points};
    if (cfg.input.angles_file.empty() && !cfg.input.stack.empty() && cfg.mode == Mode::stack)
        inputs.push_back(mdoc_beside(cfg.input.stack));  // read when angles is unset
    if (is_mdoc(cfg.input.files)) {
        try {
            for (const std::string& f : mdoc_view_files(read_mdoc(cfg.input.files))) inputs.push_back(f);
        } catch (const InputError&) {
            // planning reports it
        }
    }
    if (!cfg.input.files.empty()) {
        glob_t g{};
        if (::glob(cfg.input.files.c_str(), 0, nullptr, &g) == 0)
            for (std::size_t i = 0; i < g.gl_pathc; ++i) inputs.push_back(g.gl_pathv[i]);
        globfree(&g);
    }
    for (const std::string& p : inputs) {
        if (p.empty()) continue;
        std::error_code ec;
        const auto size = fs::file_size(p, ec);
        const auto time = fs::last_write_time(p, ec);
        mix(h, p + "|" + std::to_string(ec ? 0 : size) + "|" +
                   std::to_string(ec ? 0 : time.time_since_epoch().count()));
    }
    char buf[20];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

bool outputs_up_to_date(const Config& cfg) {
    std::ifstream in(fs::path(cfg.output.dir) / output_names::run_json);
    if (!in) return false;
    try {
        const nlohmann::json j = nlohmann::json::parse(in);
        return j.contains("fingerprint") && j["fingerprint"] == job_fingerprint(cfg);
    } catch (const nlohmann::json::exception&) {
        return false;  // unreadable: not a finished run
    }
}

Provenance provenance_of(const Config& cfg) { return {cfg.path, config_values(cfg), job_fingerprint(cfg)}; }

}  // namespace stackalign
