#include "run_options.hpp"

#include "../kernels/cuda_api.hpp"
#include "../src/error.hpp"
#include "../src/output_files.hpp"

#include <filesystem>

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

}  // namespace stackalign
