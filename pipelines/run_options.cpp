#include "run_options.hpp"

#include <glob.h>
#include <tiffio.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../kernels/cuda_api.hpp"
#include "../src/core/error.hpp"
#include "../src/output/output_files.hpp"
#include "../src/core/version.hpp"

namespace fs = std::filesystem;

namespace stackalign {

Backend choose_backend(const std::string& requested, int gpu) {
    if (requested == "cpu") return Backend::cpu;
    const int devices = cuda::device_count();
    if (requested == "cuda") {
        if (!cuda::compiled_in())
            throw UnsupportedError("backend \"cuda\" was requested but this stackalign was built without CUDA "
                                   "(no nvcc at build time); install the CUDA toolkit and rebuild, or use --backend cpu");
        if (devices == 0)
            throw UnsupportedError("backend \"cuda\" was requested but no CUDA GPU is usable on this machine "
                                   "(driver reports 0 devices); use --backend cpu or auto");
        if (gpu >= devices)
            throw UnsupportedError("[device] gpu = " + std::to_string(gpu) + " but this machine has " +
                                   std::to_string(devices) + " CUDA device(s) (0-based)");
        return Backend::cuda;
    }
    return devices > gpu ? Backend::cuda : Backend::cpu;
}

std::string describe_backend(Backend b, int gpu) {
    return b == Backend::cuda ? "cuda (GPU " + std::to_string(gpu) + ": " + cuda::device_name(gpu) + ")" : "cpu";
}

void apply_search_choice(const SearchConfig& search, SearchSetup& setup) {
    setup.method = search.method == "mtb-projection" ? SearchMethod::mtb_projection : SearchMethod::window;
    setup.mtb_band = search.mtb_band;
    setup.search.metric = metric_from_string(search.metric);
    setup.histogram = search.histogram;
    setup.search.sample_stride = 1;
    if (search.histogram == "bin-partitioned-sampled") {
        setup.histogram = "bin-partitioned";
        setup.search.sample_stride = kPartitionSampleStride;
    }
}

std::unique_ptr<PairSearcher> make_pair_searcher(Backend b, const SearchSetup& setup) {
    return b == Backend::cuda ? cuda::make_pair_searcher(setup) : make_cpu_pair_searcher(setup);
}

std::string start_output_dir(const std::string& dir) {
    prepare_output_dir(dir);
    const std::string run_json = (std::filesystem::path(dir) / "run.json").string();
    std::error_code ec;
    std::filesystem::remove(run_json, ec);
    return run_json;
}

std::vector<int> resolve_gpus(const DeviceConfig& d, Backend backend) {
    if (d.gpus.empty() || backend != Backend::cuda) return {};
    const int count = cuda::device_count();
    if (d.gpus == std::vector<int>{-1}) {
        std::vector<int> all;
        for (int g = 0; g < count; ++g) all.push_back(g);
        return all;
    }
    for (int g : d.gpus)
        if (g >= count)
            throw UnsupportedError("[device] gpus lists GPU " + std::to_string(g) + " but this machine has " +
                                   std::to_string(count));
    return d.gpus;
}

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

nlohmann::ordered_json run_json_header(const Config& cfg) {
    nlohmann::ordered_json j;
    j["stackalign_version"] = STACKALIGN_VERSION;
    j["libtiff"] = TIFFGetVersion();
    j["config_file"] = cfg.path;
    j["fingerprint"] = job_fingerprint(cfg);
    return j;
}

bool outputs_up_to_date(const Config& cfg) {
    std::ifstream in(fs::path(cfg.output.dir) / "run.json");
    if (!in) return false;
    try {
        const nlohmann::json j = nlohmann::json::parse(in);
        return j.contains("fingerprint") && j["fingerprint"] == job_fingerprint(cfg);
    } catch (const nlohmann::json::exception&) {
        return false;  // unreadable: not a finished run
    }
}

}  // namespace stackalign
