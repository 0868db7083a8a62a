#include "stack_alignment.hpp"

#include <glob.h>
#include <omp.h>
#include <tiffio.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../kernels/cuda_api.hpp"
#include "../src/apply_shift.hpp"
#include "../src/error.hpp"
#include "../src/natural_sort.hpp"
#include "../src/tiff_io.hpp"
#include "../src/version.hpp"

namespace fs = std::filesystem;

namespace stackalign {

namespace {


std::vector<std::string> expand_files(const Config& cfg) {
    glob_t g{};
    const int rc = glob(cfg.input.files.c_str(), 0, nullptr, &g);
    std::vector<std::string> files;
    for (std::size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) files.push_back(g.gl_pathv[i]);
    globfree(&g);
    if (files.empty()) throw InputError(cfg.where("input.files") + ": no file matches \"" + cfg.input.files + "\"");
    natural_sort(files);
    return files;
}

MiSearchParams resolve_window(const Config& cfg, int width, int height) {
    const SearchConfig& s = cfg.search;
    MiSearchParams p;
    p.bins = cfg.preprocess.bins;
    p.max_shift = {s.max_shift, s.max_shift, 0};
    p.window.width = s.window_width ? s.window_width : width - 2 * s.max_shift;
    p.window.height = s.window_height ? s.window_height : height - 2 * s.max_shift;
    if (p.window.width < 1 || p.window.height < 1)
        throw ConfigError(cfg.where("search.max_shift") + ": max_shift " + std::to_string(s.max_shift) +
                          " leaves no room for a search window in " + std::to_string(width) + "x" +
                          std::to_string(height) + " frames");
    p.window.x = s.origin_x.value_or((width - p.window.width) / 2);
    p.window.y = s.origin_y.value_or((height - p.window.height) / 2);
    try {
        check_window_fits(p, width, height);
    } catch (const InputError& e) {
        const std::string key = s.origin_x ? "search.window_origin" : "search.window";
        throw ConfigError(cfg.where(key) + ": " + e.what() + "; window + 2*max_shift must fit inside the frame");
    }
    return p;
}

}  // namespace

StackPlan plan_stack(const Config& cfg, const RunOptions& opt) {
    StackPlan plan;
    if (!cfg.input.stack.empty()) {
        plan.files = {cfg.input.stack};
        const TiffInfo info = probe_tiff(cfg.input.stack);
        plan.frames = info.pages;
        plan.width = info.width;
        plan.height = info.height;
        plan.type = info.type;
    } else {
        plan.files = expand_files(cfg);
        plan.frames = int(plan.files.size());
        for (std::size_t i = 0; i < plan.files.size(); ++i) {
            const TiffInfo info = probe_tiff(plan.files[i]);
            if (i == 0) {
                plan.width = info.width;
                plan.height = info.height;
                plan.type = info.type;
            } else if (info.width != plan.width || info.height != plan.height || info.type != plan.type) {
                throw InputError(plan.files[i] + ": frame is " + std::to_string(info.width) + "x" +
                                 std::to_string(info.height) + " " + to_string(info.type) + " but " + plan.files[0] +
                                 " is " + std::to_string(plan.width) + "x" + std::to_string(plan.height) + " " +
                                 to_string(plan.type) + "; every frame must have the same size and type");
            }
        }
    }
    if (plan.frames < 2)
        throw InputError(plan.files[0] + ": has " + std::to_string(plan.frames) +
                         " frame; alignment needs at least 2 frames");
    plan.reference = cfg.alignment.reference.value_or(plan.frames / 2);
    if (plan.reference >= plan.frames)
        throw ConfigError(cfg.where("alignment.reference") + ": frame " + std::to_string(plan.reference) +
                          " does not exist; the stack has frames 0.." + std::to_string(plan.frames - 1));
    plan.setup.preprocess = {cfg.preprocess.mean_radius, cfg.preprocess.sobel, float(cfg.preprocess.threshold),
                             cfg.preprocess.bins};
    plan.setup.search = resolve_window(cfg, plan.width, plan.height);
    plan.setup.histogram = cfg.search.histogram;
    plan.setup.gpu = cfg.device.gpu;
    plan.backend = choose_backend(opt.backend.value_or(cfg.device.backend), cfg.device.gpu);
    return plan;
}

std::string describe_plan(const Config& cfg, const StackPlan& plan) {
    const MiSearchParams& s = plan.setup.search;
    std::ostringstream o;
    o << "input:      " << (cfg.input.stack.empty() ? cfg.input.files : cfg.input.stack) << "\n"
      << "frames:     " << plan.frames << " x " << plan.width << "x" << plan.height << " " << to_string(plan.type)
      << "\n"
      << "preprocess: mean_radius " << cfg.preprocess.mean_radius << ", sobel " << (cfg.preprocess.sobel ? "on" : "off")
      << ", threshold " << cfg.preprocess.threshold << ", bins " << cfg.preprocess.bins << "\n"
      << "search:     window " << s.window.width << "x" << s.window.height << " at (" << s.window.x << ","
      << s.window.y << "), shifts +-" << s.max_shift.x << " (" << s.candidates() << " candidates), subpixel "
      << (cfg.search.subpixel ? "on" : "off") << "\n"
      << "reference:  frame " << plan.reference << "\n"
      << "backend:    " << describe_backend(plan.backend, plan.setup.gpu) << "\n"
      << "output:     " << cfg.output.dir << "\n";
    return o.str();
}

StackResult run_stack(const Config& cfg, const RunOptions& opt) {
    const auto t_start = Clock::now();
    if (opt.threads > 0) omp_set_num_threads(opt.threads);
    const StackPlan plan = plan_stack(cfg, opt);
    const std::string run_json = start_output_dir(cfg.output.dir);

    log_line(opt.verbosity, "aligning " + std::to_string(plan.frames) + " frames of " + std::to_string(plan.width) +
                                "x" + std::to_string(plan.height) + " " + to_string(plan.type) + " from " +
                                plan.files[0] + (plan.files.size() > 1 ? " ..." : ""));

    auto t = Clock::now();
    const Stack stack = cfg.input.stack.empty() ? read_tiff_files(plan.files) : read_tiff_stack(cfg.input.stack);
    const double t_read = seconds_since(t);

    std::unique_ptr<PairSearcher> searcher = make_pair_searcher(plan.backend, plan.setup);
    StackResult result;
    result.backend_description = searcher->describe();
    log_line(opt.verbosity, "backend: " + result.backend_description);

    const int pairs = plan.frames - 1;
    std::vector<Shift> neighbour(pairs);
    double t_pre = 0, t_search = 0;
    Progress progress("pairs", pairs, opt.verbosity);
    t = Clock::now();
    searcher->load(0, stack.frames[0]);
    t_pre += seconds_since(t);
    for (int i = 0; i < pairs; ++i) {
        const int ref_slot = i % 2, mov_slot = 1 - ref_slot;
        t = Clock::now();
        searcher->load(mov_slot, stack.frames[i + 1]);
        t_pre += seconds_since(t);
        t = Clock::now();
        const MiPeak peak = searcher->search(ref_slot, mov_slot);
        t_search += seconds_since(t);
        if (i == 0 && searcher->describe() != result.backend_description) {
            result.backend_description = searcher->describe();  // a strategy auto-tuned on this pair
            log_line(opt.verbosity, "backend: " + result.backend_description);
        }
        result.pairs.push_back(peak);
        neighbour[i] = {double(peak.dx), double(peak.dy)};
        if (cfg.search.subpixel) {
            neighbour[i].dx += parabolic_offset(peak.around[1][0], peak.around[1][1], peak.around[1][2]);
            neighbour[i].dy += parabolic_offset(peak.around[0][1], peak.around[1][1], peak.around[2][1]);
        }
        progress.step(i + 1);
    }
    progress.finish();
    searcher.reset();

    const std::vector<Shift> offsets = accumulate_shifts(neighbour, plan.reference);
    result.frames.resize(plan.frames);
    for (int k = 0; k < plan.frames; ++k) {
        result.frames[k].offset = offsets[k];
        result.frames[k].neighbour = k ? neighbour[k - 1] : Shift{};
        result.frames[k].mi = k ? result.pairs[k - 1].mi : std::nan("");
    }

    double t_apply = 0, t_write = 0;
    const fs::path dir(cfg.output.dir);
    if (cfg.output.aligned) {
        t = Clock::now();
        std::vector<RawFrame> aligned(plan.frames);
        for (int k = 0; k < plan.frames; ++k)
            aligned[k] = shift_frame(stack.frames[k], offsets[k].dx, offsets[k].dy, stack.frames[k].mean());
        t_apply = seconds_since(t);
        t = Clock::now();
        write_atomically((dir / "aligned.tif").string(),
                         [&](const std::string& tmp) { write_tiff_stack(tmp, aligned); });
        t_write += seconds_since(t);
    }
    t = Clock::now();
    write_text_atomically((dir / "shifts.csv").string(), shifts_csv(result.frames));
    write_text_atomically((dir / "transforms.xf").string(), imod_xf(result.frames));
    t_write += seconds_since(t);

    nlohmann::ordered_json j;
    j["stackalign_version"] = STACKALIGN_VERSION;
    j["libtiff"] = TIFFGetVersion();
    j["config_file"] = cfg.path;
    j["config"] = {
        {"mode", cfg.mode},
        {"input", {{"stack", cfg.input.stack}, {"files", cfg.input.files}}},
        {"preprocess",
         {{"mean_radius", cfg.preprocess.mean_radius},
          {"sobel", cfg.preprocess.sobel},
          {"threshold", cfg.preprocess.threshold},
          {"bins", cfg.preprocess.bins}}},
        {"search",
         {{"window", {plan.setup.search.window.width, plan.setup.search.window.height}},
          {"window_origin", {plan.setup.search.window.x, plan.setup.search.window.y}},
          {"max_shift", cfg.search.max_shift},
          {"subpixel", cfg.search.subpixel},
          {"histogram", cfg.search.histogram}}},
        {"alignment", {{"reference", plan.reference}}},
        {"output", {{"dir", cfg.output.dir}, {"aligned", cfg.output.aligned}}},
        {"device", {{"backend", to_string(plan.backend)}, {"gpu", cfg.device.gpu}}}};
    j["input"] = {{"files", plan.files},
                  {"frames", plan.frames},
                  {"width", plan.width},
                  {"height", plan.height},
                  {"pixel_type", to_string(plan.type)}};
    j["backend"] = result.backend_description;
    j["threads"] = omp_get_max_threads();
    j["pairs"] = nlohmann::json::array();
    for (int i = 0; i < pairs; ++i) {
        const MiPeak& p = result.pairs[i];
        j["pairs"].push_back({{"ref", i},
                              {"mov", i + 1},
                              {"dx", p.dx},
                              {"dy", p.dy},
                              {"subpixel_dx", neighbour[i].dx},
                              {"subpixel_dy", neighbour[i].dy},
                              {"mi", p.mi},
                              {"sharpness", p.sharpness()}});
    }
    j["seconds"] = {{"read", t_read},        {"preprocess", t_pre}, {"search", t_search},
                    {"apply", t_apply},      {"write", t_write},    {"total", seconds_since(t_start)}};
    j["pair_updates_per_second"] =
        t_search > 0 ? double(plan.setup.search.window_pixels()) * plan.setup.search.candidates() * pairs / t_search : 0;
    write_text_atomically(run_json, j.dump(2) + "\n");

    std::ostringstream done;
    done.precision(3);
    done << "done in " << seconds_since(t_start) << " s (read " << t_read << ", preprocess " << t_pre << ", search "
         << t_search << ", apply " << t_apply << ", write " << t_write << "); outputs in " << cfg.output.dir;
    log_line(opt.verbosity, done.str());
    return result;
}

}  // namespace stackalign
