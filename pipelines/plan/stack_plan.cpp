#include "stack_plan.hpp"

#include <glob.h>
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <thread>

#include "../../src/alignment/tilt_geometry.hpp"
#include "../../src/core/error.hpp"
#include "output_guard.hpp"
#include "output_names.hpp"
#include "tilt_decisions.hpp"
#include "view_angles.hpp"
#include "../../src/core/natural_sort.hpp"
#include "../../src/io/mdoc.hpp"
#include "../../src/io/mrc_io.hpp"
#include "../../src/io/tiff_io.hpp"
#include "../../src/io/tilt_angles.hpp"

namespace fs = std::filesystem;

namespace stackalign {

namespace {


// Searchers that share one GPU, each with a stream and a host thread of its
// own: a pair's work is a few short launches with a wait between, then host
// work (scores, checks, decoding), so one searcher leaves the GPU idle most
// of the time and others fill it. At most a quarter of the host's cores per
// GPU, as each also does its pairs' host work.
int gpu_searchers(const std::vector<int>& gpus) {
    const int per_gpu = std::clamp(int(std::thread::hardware_concurrency()) / 4, 1, 4);
    return per_gpu * int(std::max<std::size_t>(gpus.size(), 1));
}

// On the CPU, each searcher runs its loops on its share of the OpenMP
// threads (run_workers), and a share keeps busy about one thread per
// kCpuWindowPixelsPerThread pixels of the window: fewer threads each for
// small windows, whose loops are too short for many, and more for large
// ones, whose pairs are few. Measured on the H200 host's 16 cores
// (bench/job_profile.py, start to exit, medians of eight, s, 1 / 2 /
// 4 / 8 / 16 searchers, H100 host):
//   X-ray-sized (112 x 87 window, 90 pairs)   0.222 / 0.187 / 0.153 / 0.129 / 0.135
//   HAADF sample (40 x 40, 90 pairs)         0.084 / 0.081 / 0.062 / 0.054 / 0.059
//   drift (352 x 352, 30 pairs)              0.531 / 0.478 / 0.513 / 0.572 / 0.569
//   sample time-lapse (384 x 384, 12 pairs)  0.485 / 0.376 / 0.462 / 0.579 / 0.591
// and on 8 of them the same order (time-lapse best with 1, X-ray-sized with
// 4-8). So: the window's pixels / kCpuWindowPixelsPerThread threads a
// searcher, to the nearest power of two, at least 2 (with one thread each
// the two small windows above were a little slower than with two, on both
// hosts); at most a searcher per 4 neighbour pairs. On 2 threads that is one
// searcher, as 2 of one thread each were no faster there (X-ray-sized
// 0.85-1.11 s against 0.75-1.04, four rounds).
//
// A stretched series keeps a quarter of the threads, at most 4: its pairs
// run in two chains from the reference, and the searchers beyond them take
// the skips (tilt series, 16 cores: 2.49-2.54 s with 4, 8 or 16, 2.72 with 2).
// Frames above 2048^2 keep one: their loops have work for every thread, and
// a CPU searcher holds four views with their refinement features (a 4096^2
// view's are 144 MB), so four searchers would hold 2.3 GB beside the frame
// cache.
constexpr long long kCpuSearchersMaxPixels = 2048LL * 2048;
constexpr double kCpuWindowPixelsPerThread = 16384;
int cpu_searchers(const StackPlan& plan, int threads) {
    if ((long long)(plan.width) * plan.height > kCpuSearchersMaxPixels) return 1;
    if (plan.stretch) return std::clamp(threads / 4, 1, 4);
    const SearchWindow& w = plan.setup.search.window;
    const double per_thread = std::max(double(w.width) * w.height / kCpuWindowPixelsPerThread, 1.0);
    const int each = std::clamp(1 << int(std::lround(std::log2(per_thread))), 2, std::max(threads, 2));
    const int pairs = int(plan.kept.size()) - 1;
    return std::clamp(threads / each, 1, std::max(1, pairs / 4));
}

// The backend, GPUs and searchers, once the job's shape is known. "auto"
// with one GPU weighs the job (backend_cost.hpp); a job the CPU is
// estimated to finish sooner is given to the CPU without asking the driver,
// whose start and release cost a lone process 0.15 s (H200 host).
void choose_device(StackPlan& plan, const Config& cfg, const RunOptions& opt) {
    const BackendRequest requested = opt.backend.value_or(cfg.device.backend);
    const int gpu = cfg.device.gpu;
    std::optional<BackendEstimate> estimate;
    if (requested == BackendRequest::automatic && cfg.device.gpus.size() <= 1) {
        const BackendEstimate e = estimate_backends(plan, omp_get_max_threads(),
                                                    cfg.device.searchers.value_or(gpu_searchers({})),
                                                    gpu_start_seconds_here(opt.batch_jobs, gpu));
        if (e.modelled) estimate = e;
    }
    plan.device = {choose_by_estimate(requested, gpu, estimate), gpu};
    plan.backend_choice = estimate;
    plan.gpus = resolve_gpus(cfg.device.gpus, plan.device.backend);
    plan.searchers = cfg.device.searchers.value_or(plan.device.backend == Backend::cuda
                                                       ? gpu_searchers(plan.gpus)
                                                       : cpu_searchers(plan, omp_get_max_threads()));
}

// Frame numbers are the last run of digits in each file name. When the names
// differ only there and the numbers skip (img_0004, img_0007), frames went
// missing (a failed transfer, a crashed acquisition): aligning across the gap
// would chain the wrong neighbours, so it is an error unless allow_gaps.
void check_no_gaps(const Config& cfg, const std::vector<std::string>& files) {
    struct Parts {
        std::string before, after;
        long number;
    };
    std::vector<Parts> parts;
    for (const std::string& f : files) {
        const std::string name = fs::path(f).filename().string();
        const auto last = name.find_last_of("0123456789");
        if (last == std::string::npos) return;  // no numbers: nothing to check
        auto first = last;
        while (first > 0 && std::isdigit(static_cast<unsigned char>(name[first - 1]))) --first;
        if (last - first > 15) return;
        parts.push_back({fs::path(f).parent_path().string() + "/" + name.substr(0, first), name.substr(last + 1),
                         std::stol(name.substr(first, last - first + 1))});
    }
    for (std::size_t i = 1; i < parts.size(); ++i) {
        if (parts[i].before != parts[0].before || parts[i].after != parts[0].after) return;  // not one numbered series
        if (parts[i].number > parts[i - 1].number + 1) {
            const long missing = parts[i].number - parts[i - 1].number - 1;
            throw InputError(cfg.where("input.files") + ": " + std::to_string(missing) + " frame" +
                             (missing == 1 ? " is" : "s are") + " missing between " + files[i - 1] + " and " + files[i] +
                             " (numbers " + std::to_string(parts[i - 1].number + 1) +
                             (missing > 1 ? ".." + std::to_string(parts[i].number - 1) : std::string()) +
                             "); if the gap is intended, set [input] allow_gaps = true");
        }
    }
}

std::vector<std::string> expand_files(const Config& cfg) {
    if (is_mdoc(cfg.input.files)) return mdoc_view_files(read_mdoc(cfg.input.files));
    glob_t g{};
    const int rc = glob(cfg.input.files.c_str(), 0, nullptr, &g);
    std::vector<std::string> files;
    for (std::size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) files.push_back(g.gl_pathv[i]);
    globfree(&g);
    if (files.empty()) throw InputError(cfg.where("input.files") + ": no file matches \"" + cfg.input.files + "\"");
    natural_sort(files);
    if (!cfg.input.allow_gaps) check_no_gaps(cfg, files);
    return files;
}

MiSearchParams resolve_window(const Config& cfg, int width, int height) {
    const SearchConfig& s = cfg.search;
    MiSearchParams p;
    p.bins = cfg.preprocess.bins;
    p.max_shift = {s.max_shift, s.max_shift, 0};
    p.window.width = s.window_width ? s.window_width : width - 2 * s.max_shift;
    p.window.height = s.window_height ? s.window_height : height - 2 * s.max_shift;
    if (!s.motion.translation_only() && !s.window_width) {
        // The default window shrunk so that, turned by the largest angle and
        // scaled by the largest scale, it still lies inside the moving frame:
        // every candidate is then scored on the same pixels, none on fill.
        const double a = s.motion.angle_range * M_PI / 180, c = std::cos(a), sn = std::sin(a);
        const double grow = s.motion.model == MotionModel::similarity ? 1 + s.motion.scale_range : 1;
        const double hw = p.window.width / 2.0, hh = p.window.height / 2.0;
        const double k = std::min(hw / (hw * c + hh * sn), hh / (hw * sn + hh * c)) / grow;
        p.window.width = std::max(1, int(std::floor(p.window.width * k)) - 2);
        p.window.height = std::max(1, int(std::floor(p.window.height * k)) - 2);
    }
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



StackPlan plan_stack(const Config& cfg, const RunOptions& opt, const StackInfo* held) {
    StackPlan plan;
    if (held && cfg.input.stack.empty())
        throw InternalError("a series held in memory needs input.stack to name it and its outputs");
    check_outputs_spare_inputs(cfg);
    plan.input_label = cfg.input.stack.empty() ? cfg.input.files : cfg.input.stack;
    if (!cfg.input.stack.empty()) {
        plan.files = {cfg.input.stack};
        plan.input = held ? *held : probe_stack_file(cfg.input.stack);
        plan.input_in_memory = held != nullptr;
        plan.name = output_names::imod_stem(cfg.input.stack);
    } else {
        plan.files = expand_files(cfg);
        plan.name = output_names::imod_stem("");
        plan.input.format = "tiff";
        for (std::size_t i = 0; i < plan.files.size(); ++i) {
            if (is_mrc_path(plan.files[i]))
                throw ConfigError(cfg.where("input.files") + ": matches the MRC file " + plan.files[i] +
                                  "; files = is for one TIFF per frame, an MRC stack goes in stack = \"...\"");
            const TiffInfo info = probe_tiff(plan.files[i]);
            if (i == 0) {
                plan.input.width = info.width;
                plan.input.height = info.height;
                plan.input.type = info.type;
            } else if (info.width != plan.input.width || info.height != plan.input.height || info.type != plan.input.type) {
                throw InputError(plan.files[i] + ": frame is " + std::to_string(info.width) + "x" +
                                 std::to_string(info.height) + " " + to_string(info.type) + " but " + plan.files[0] +
                                 " is " + std::to_string(plan.input.width) + "x" + std::to_string(plan.input.height) +
                                 " " + to_string(plan.input.type) + "; every frame must have the same size and type");
            }
        }
        plan.input.frames = int(plan.files.size());
    }
    plan.frames = plan.input.frames;
    plan.width = plan.input.width;
    plan.height = plan.input.height;
    plan.type = plan.input.type;
    if (plan.frames < 2)
        throw InputError(plan.files[0] + ": has " + std::to_string(plan.frames) +
                         " frame; alignment needs at least 2 frames");

    plan_angles(cfg, plan);

    plan.excluded.assign(plan.frames, false);
    for (int v : cfg.alignment.exclude) {
        if (v >= plan.frames)
            throw ConfigError(cfg.where("alignment.exclude") + ": view " + std::to_string(v) +
                              " does not exist; the stack has views 0.." + std::to_string(plan.frames - 1));
        plan.excluded[plan.view_of_frame(v)] = true;
    }
    for (int v = 0; v < plan.frames; ++v)
        if (!plan.excluded[v]) plan.kept.push_back(v);
    if (plan.kept.size() < 2)
        throw ConfigError(cfg.where("alignment.exclude") + ": leaves " + std::to_string(plan.kept.size()) +
                          " view; alignment needs at least 2");

    if (cfg.alignment.reference) {
        const int frame = *cfg.alignment.reference;
        plan.reference_why = "set in the config";
        if (frame >= plan.frames)
            throw ConfigError(cfg.where("alignment.reference") + ": frame " + std::to_string(frame) +
                              " does not exist; the stack has frames 0.." + std::to_string(plan.frames - 1));
        plan.reference = plan.view_of_frame(frame);
        if (plan.excluded[plan.reference])
            throw ConfigError(cfg.where("alignment.reference") + ": view " + std::to_string(frame) +
                              " is also in [alignment] exclude; the reference must be searched");
    } else if (!plan.angles.empty() && !cfg.alignment.reference_middle) {
        plan.reference = lowest_tilt_view(plan.angles, plan.excluded);
        plan.reference_why = "lowest |tilt|";
    } else {
        // The middle view, or the nearest searched one.
        plan.reference = plan.kept.front();
        for (int v : plan.kept)
            if (std::abs(v - plan.frames / 2) < std::abs(plan.reference - plan.frames / 2)) plan.reference = v;
        plan.reference_why = "middle";
    }
    plan.tilt_axis = cfg.alignment.tilt_axis;
    // "auto", the default, where there are angles; asked for without them, an error below.
    const bool axis_asked = cfg.lines.count("alignment.tilt_axis") > 0;
    plan.tilt_axis_asked = axis_asked;
    plan.tilt_axis_auto = cfg.alignment.tilt_axis_auto && (axis_asked || !plan.angles.empty());
    // An .mdoc's axis where the config names none: "auto", the header's
    // angle checked against the views (headers several degrees off or
    // mirrored are what users of other tools report).
    if (plan.mdoc_tilt_axis && !axis_asked) {
        plan.tilt_axis_auto = true;
        plan.tilt_axis = *plan.mdoc_tilt_axis;
    }
    if (plan.tilt_axis_auto && plan.angles.empty())
        throw ConfigError(cfg.where("alignment.tilt_axis") + ": \"auto\" estimates a tilt series' axis and needs its "
                          "angles ([input] angles)");
    decide_stretch(plan, cfg.alignment.cosine_stretch);
    plan.output = {cfg.output.dir, cfg.output.aligned, cfg.output.report,
                   cfg.output.format == OutputFormat::automatic ? plan.input.format : name_of(cfg.output.format)};
    if (plan.output.format == "mrc" && plan.type == PixelType::i32)
        throw ConfigError(cfg.where("output.format") + ": 32-bit integer frames have no MRC mode; use format = \"tiff\"");

    plan.setup.preprocess = {cfg.preprocess.mean_radius, cfg.preprocess.sobel, float(cfg.preprocess.threshold),
                             cfg.preprocess.bins};
    plan.setup.search = resolve_window(cfg, plan.width, plan.height);
    plan.setup.search.metric = cfg.search.metric;
    // Rigid and similarity pairs choose for themselves unless told.
    plan.setup.refine_auto = cfg.search.refine_metric ? *cfg.search.refine_metric == RefineMetric::automatic
                                                      : !cfg.search.motion.translation_only();
    plan.setup.refine_metric = named_metric(cfg.search.refine_metric).value_or(cfg.search.metric);
    plan.setup.histogram = cfg.search.histogram;
    plan.setup.method = cfg.search.method;
    plan.setup.mtb_band = cfg.search.mtb_band;
    plan.setup.subpixel = cfg.search.subpixel;
    plan.setup.refine_on = !plan.angles.empty() && cfg.preprocess.sobel ? RefineOn::edges : RefineOn::intensity;
    // "auto" measures the noise for shifts only: rigid motion's angles were
    // more precise at 1 px on frames with little noise (bench/rigid_peers.py,
    // angle RMS 0.0021 deg at 1 px, 0.0035 at 0.65).
    plan.setup.refine_sigma = cfg.search.refine_sigma ? float(*cfg.search.refine_sigma) : kRefineSigma;
    plan.setup.refine_side = cfg.search.refine_side.value_or(0);
    plan.refine_sigma_auto = !cfg.search.refine_sigma && cfg.search.motion.translation_only() &&
                             plan.setup.subpixel == Subpixel::continuous && plan.setup.method == SearchMethod::window;
    plan.refine_sigma_why = cfg.search.refine_sigma      ? "config"
                            : plan.refine_sigma_auto     ? "auto: the frames' noise"
                            : cfg.search.motion.translation_only() ? "default (no continuous refinement)"
                                                                   : "auto: 1 px for rigid and similarity motion";
    plan.flags = {cfg.alignment.min_sharpness, cfg.alignment.min_confidence, cfg.alignment.outlier_z, cfg.alignment.on_outlier,
                  cfg.alignment.unreliable_px, (plan.width - 1) / 2.0, (plan.height - 1) / 2.0};
    plan.solve = cfg.alignment.solve;
    plan.motion = cfg.search.motion;
    if (!plan.motion.translation_only()) {
        if (plan.stretch)
            throw ConfigError(cfg.where("search.transform") + ": \"" + name_of(plan.motion.model) +
                              "\" with tilt angles needs cosine_stretch = false: a tilt series' views turn "
                              "about its tilt axis (tilt_axis, or \"auto\"), not from view to view");
        if (plan.setup.method != SearchMethod::window)
            throw ConfigError(cfg.where("search.transform") + ": \"" + name_of(plan.motion.model) +
                              "\" needs method = \"window\" (bitmap projections measure shifts only)");
    }
    plan.coarse_request = cfg.search.coarse_to_fine;
    plan.binning = cfg.search.binning.value_or(0);
    {
        const MiSearchParams& w = plan.setup.search;
        const bool translation = plan.motion.translation_only() && plan.setup.method == SearchMethod::window;
        const bool window_fits = std::min(w.window.width, w.window.height) >= 16;
        const auto [lattice, step] = sharpness_lattice(w.max_shift);
        plan.coarse_possible = translation && window_fits && (step.x > 1 || step.y > 1);
        // Asked for outright: say why it cannot be (a range under 8 px is
        // searched whole either way, so it is no error).
        if (plan.coarse_request == CoarseToFine::on && !translation)
            throw ConfigError(cfg.where("search.coarse_to_fine") +
                              ": searches shifts by the window method only (transform = \"translation\", "
                              "method = \"window\"); rigid and similarity searches have a coarse level of their own");
        if (plan.coarse_request == CoarseToFine::on && !window_fits)
            throw ConfigError(cfg.where("search.coarse_to_fine") + ": the " + std::to_string(w.window.width) + "x" +
                              std::to_string(w.window.height) +
                              " window is too small to search on 2x2 block means (at least 16 px along each side)");
        if (plan.binning > 0 && std::min(w.window.width, w.window.height) < 8 * plan.binning)
            throw ConfigError(cfg.where("search.binning") + ": " + std::to_string(plan.binning) + "x" +
                              std::to_string(plan.binning) + " blocks leave the " + std::to_string(w.window.width) +
                              "x" + std::to_string(w.window.height) +
                              " window under 8 blocks along a side; a smaller binning, or a larger window");
    }
    const AlignmentConfig& a = cfg.alignment;
    decide_centre_of_mass(plan, a.center_of_mass);
    plan.axis_place = a.axis_place && !plan.angles.empty();
    decide_slab_fit(plan, a.slab_fit);
    decide_projection_matching(plan, cfg);
    choose_device(plan, cfg, opt);
    plan.provenance = provenance_of(cfg);
    return plan;
}

std::vector<int> searcher_gpus(const StackPlan& plan) {
    return plan.gpus.size() > 1 ? plan.gpus : std::vector<int>{plan.device.gpu};
}

std::string describe_plan(const StackPlan& plan) {
    const MiSearchParams& s = plan.setup.search;
    std::ostringstream o;
    const PreprocessParams& pre = plan.setup.preprocess;
    std::ostringstream smoothing;
    if (plan.refine_sigma_auto) smoothing << kRefineSigmaClean << "-" << kRefineSigma << " px by the frames' noise";
    else smoothing << plan.setup.refine_sigma << " px";
    o << "input:      " << plan.input_label << " (" << plan.input.format;
    if (plan.input.pixel_size > 0) o << ", " << plan.input.pixel_size << " A/pixel";
    o << ")\n"
      << "frames:     " << plan.frames << " x " << plan.width << "x" << plan.height << " " << to_string(plan.type)
      << "\n";
    if (!plan.angles.empty()) {
        o << "tilt:       " << plan.angles.front() << " .. " << plan.angles.back() << " degrees, axis ";
        if (plan.tilt_axis_auto) o << "auto (from the views)";
        else o << plan.tilt_axis << " degrees from y";
        o << ", cosine stretch " << (plan.stretch ? "on" : "off") << " (" << plan.stretch_why << ")\n";
    }
    if (plan.kept.size() < std::size_t(plan.frames)) {
        o << "excluded:   ";
        for (int v = 0, first = 1; v < plan.frames; ++v)
            if (plan.excluded[v]) o << (first ? "" : ", ") << v, first = 0;
        o << " (bridged; their shifts interpolated)\n";
    }
    if (plan.setup.method == SearchMethod::mtb_projection)
        o << "method:     mtb-projection (median-threshold bitmaps ignoring " << plan.setup.mtb_band
          << "% of pixels either side of the median; row/column projections compared by NCC)\n";
    else
        o << "preprocess: mean_radius " << pre.mean_radius << ", sobel " << (pre.sobel ? "on" : "off")
          << ", threshold " << pre.threshold << ", bins " << pre.bins << "\n"
          << "metric:     " << name_of(s.metric) << ", histogram " << name_of(plan.setup.histogram) << "\n";
    o << "search:     window " << s.window.width << "x" << s.window.height << " at (" << s.window.x << ","
      << s.window.y << "), shifts +-" << s.max_shift.x << " (" << s.candidates() << " candidates"
      << (plan.coarse_bin() > 1 ? ", coarse to fine: on " + std::to_string(plan.coarse_bin()) + "x" +
                                      std::to_string(plan.coarse_bin()) + " block means first"
                                : std::string())
      << "), subpixel "
      << name_of(plan.setup.subpixel)
      << (plan.setup.subpixel == Subpixel::continuous
              ? " (" + (plan.setup.refine_auto ? "auto: ncc where linear, else " : std::string()) +
                    name_of(plan.setup.refine_metric) + " on " + name_of(plan.setup.refine_on) + ", smoothed by " +
                    smoothing.str() + ")"
              : std::string())
      << "\n"
      << "motion:     " << name_of(plan.motion.model);
    if (!plan.motion.translation_only()) {
        o << ", angles +-" << plan.motion.angle_range << " step " << plan.motion.angle_step << " degrees ("
          << plan.motion.angles().size() << ")";
        if (plan.motion.model == MotionModel::similarity)
            o << ", scales 1+-" << plan.motion.scale_range << " step " << plan.motion.scale_step << " ("
              << plan.motion.scales().size() << ")";
        if (plan.solve == OffsetSolve::least_squares) o << "; skip pairs searched at the neighbours' composed angle";
    }
    o << "\n"
      << "reference:  frame " << plan.reference << " (" << plan.reference_why << ")\n"
      << "flags:      weak peak below sharpness " << plan.flags.min_sharpness << ", outlier above robust z "
      << plan.flags.outlier_z;
    if (plan.solve == OffsetSolve::least_squares) o << ", unreliable above " << plan.flags.unreliable_px << " px triplet disagreement";
    o << "; flagged pairs: " << name_of(plan.flags.on_outlier) << "\n"
      << "offsets:    " << name_of(plan.solve)
      << (plan.projection.on ? ", then projection matching (at most " + std::to_string(plan.projection.iterations) +
                                   " rounds)"
                             : std::string())
      << "\n"
      << "backend:    "
      << (plan.backend_choice ? describe_choice(*plan.backend_choice, plan.device.backend == Backend::cpu)
                              : describe_backend(plan.device.backend, plan.device.gpu))
      << ", " << plan.searchers
      << (plan.searchers == 1 ? " searcher" : " searchers at once") << "\n"
      << "output:     " << plan.output.dir << " (" << plan.output.format << ")\n";
    return o.str();
}

}  // namespace stackalign
