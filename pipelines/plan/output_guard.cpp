#include "output_guard.hpp"

#include <fnmatch.h>
#include <sys/stat.h>

#include <filesystem>
#include <unordered_map>

#include "../../src/core/error.hpp"
#include "output_names.hpp"

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

// What identifies a file through links, ".." and hard links: device and
// inode for a file that exists, else its path with the existing part of it
// resolved. Each path is resolved once; clashes are then found by lookup.
std::string file_key(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0)
        return "inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
    std::error_code ec;
    return "path " + fs::weakly_canonical(path, ec).string();
}

struct Output {
    std::string path, canonical;
    const Config* writer;
};

void check_all(const std::vector<std::pair<const Config*, std::vector<std::string>>>& writers,
               const std::vector<std::pair<const Config*, std::string>>& readers) {
    std::vector<Output> outputs;
    std::unordered_map<std::string, std::size_t> by_key;  // file key -> index in outputs
    for (const auto& [writer, paths] : writers)
        for (const std::string& path : paths) {
            std::error_code ec;
            outputs.push_back({path, fs::weakly_canonical(path, ec).string(), writer});
            by_key.emplace(file_key(path), outputs.size() - 1);
        }
    for (const auto& [reader, batch_glob] : readers) {
        for (const Input& in : input_files(*reader)) {
            const auto hit = by_key.find(file_key(in.path));
            if (hit == by_key.end()) continue;
            const Output& out = outputs[hit->second];
            throw ConfigError(out.writer->where("output.dir") + ": the output " + out.path + " would replace the input " +
                              in.path + " (" + reader->where(in.key) + "); nothing was written; choose another "
                              "[output] dir or rename the input");
        }
        for (const Input& in : input_patterns(*reader, batch_glob))
            for (const Output& out : outputs)
                if (fnmatch(in.path.c_str(), out.path.c_str(), FNM_PATHNAME) == 0 ||
                    fnmatch(in.path.c_str(), out.canonical.c_str(), FNM_PATHNAME) == 0)
                    throw ConfigError(reader->where(in.key) + ": the pattern \"" + in.path + "\" also matches the output " +
                                      out.path + " ([output] dir of " + out.writer->path + "), so a second run would "
                                      "read its own output as input; nothing was written; give the outputs a folder "
                                      "the pattern does not reach");
    }
}

}  // namespace

std::vector<std::string> output_paths(const Config& cfg) {
    const fs::path dir(cfg.output.dir);
    std::vector<std::string> names = {output_names::run_json};
    if (cfg.mode == Mode::landmarks) {
        for (const char* n : {output_names::matches, output_names::matches_amira, output_names::matches_bigwarp,
                              output_names::fit, output_names::fit_itk, output_names::fit_elastix})
            names.push_back(n);
    } else {
        const std::string stem = output_names::imod_stem(cfg.input.stack);
        for (const std::string& n : {std::string(output_names::aligned_tiff), std::string(output_names::aligned_mrc),
                                     std::string(output_names::shifts), std::string(output_names::transforms),
                                     output_names::prexf(stem), output_names::prexg(stem), output_names::tlt(stem),
                                     std::string(output_names::report)})
            names.push_back(n);
    }
    std::vector<std::string> out;
    for (const std::string& n : names) out.push_back((dir / n).string());
    return out;
}

void check_outputs_spare_inputs(const Config& cfg) { check_all({{&cfg, output_paths(cfg)}}, {{&cfg, ""}}); }

void check_outputs_spare_inputs(const Batch& batch) {
    std::vector<std::pair<const Config*, std::vector<std::string>>> writers;
    std::vector<std::pair<const Config*, std::string>> readers;
    for (const Job& job : batch.jobs) {
        std::vector<std::string> outputs = output_paths(job.config);
        if (batch.is_batch) outputs.push_back((fs::path(batch.summary_dir) / "batch.json").string());
        writers.push_back({&job.config, std::move(outputs)});
        readers.push_back({&job.config, job.glob});
    }
    check_all(writers, readers);
}

}  // namespace stackalign
