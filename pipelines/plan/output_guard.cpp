#include "output_guard.hpp"

#include <fnmatch.h>

#include <filesystem>

#include "../../src/core/error.hpp"

namespace fs = std::filesystem;

namespace stackalign {
namespace {

struct Input {
    std::string path, key;  // key: the config key that names it
};

std::vector<Input> input_files(const Config& cfg) {
    std::vector<Input> in;
    for (const auto& [path, key] : {std::pair{cfg.input.stack, "input.stack"}, {cfg.input.angles_file, "input.angles"},
                                    {cfg.landmarks.source, "landmarks.source"}, {cfg.landmarks.target, "landmarks.target"},
                                    {cfg.landmarks.points, "landmarks.points"}})
        if (!path.empty()) in.push_back({path, key});
    return in;
}

// Patterns whose matches are read: [input] files, and the batch glob a job came from.
std::vector<Input> input_patterns(const Config& cfg, const std::string& batch_glob) {
    std::vector<Input> in;
    if (!cfg.input.files.empty()) in.push_back({cfg.input.files, "input.files"});
    if (!batch_glob.empty()) in.push_back({batch_glob, "input.glob"});
    return in;
}

// The same file, through links and "..", whether or not it exists yet.
bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
    return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

bool pattern_matches(const std::string& pattern, const std::string& path) {
    if (fnmatch(pattern.c_str(), path.c_str(), FNM_PATHNAME) == 0) return true;
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(path, ec).string();
    return fnmatch(pattern.c_str(), canonical.c_str(), FNM_PATHNAME) == 0;
}

void check(const Config& writer, const std::vector<std::string>& outputs, const Config& reader,
           const std::string& batch_glob) {
    for (const std::string& out : outputs) {
        for (const Input& in : input_files(reader))
            if (same_file(out, in.path))
                throw ConfigError(writer.where("output.dir") + ": the output " + out + " would replace the input " +
                                  in.path + " (" + reader.where(in.key) + "); nothing was written; choose another "
                                  "[output] dir or rename the input");
        for (const Input& in : input_patterns(reader, batch_glob))
            if (pattern_matches(in.path, out))
                throw ConfigError(reader.where(in.key) + ": the pattern \"" + in.path + "\" also matches the output " +
                                  out + " ([output] dir of " + writer.path + "), so a second run would read its own "
                                  "output as input; nothing was written; give the outputs a folder the pattern does "
                                  "not reach");
    }
}

}  // namespace

std::vector<std::string> output_paths(const Config& cfg) {
    const fs::path dir(cfg.output.dir);
    std::vector<std::string> names = {"run.json"};
    if (cfg.mode == Mode::landmarks) {
        for (const char* n : {"matches.csv", "matches.landmarkAscii", "matches_bigwarp.csv", "fit.txt"}) names.push_back(n);
    } else {
        const std::string stem = cfg.input.stack.empty() ? "series" : fs::path(cfg.input.stack).stem().string();
        for (const std::string& n : {std::string("aligned.tif"), std::string("aligned.mrc"), std::string("shifts.csv"),
                                     std::string("transforms.xf"), stem + ".prexf", stem + ".prexg",
                                     std::string("report.html")})
            names.push_back(n);
    }
    std::vector<std::string> out;
    for (const std::string& n : names) out.push_back((dir / n).string());
    return out;
}

void check_outputs_spare_inputs(const Config& cfg) { check(cfg, output_paths(cfg), cfg, ""); }

void check_outputs_spare_inputs(const Batch& batch) {
    for (const Job& writer : batch.jobs) {
        std::vector<std::string> outputs = output_paths(writer.config);
        if (batch.is_batch) outputs.push_back((fs::path(batch.summary_dir) / "batch.json").string());
        for (const Job& reader : batch.jobs) check(writer.config, outputs, reader.config, reader.glob);
    }
}

}  // namespace stackalign
