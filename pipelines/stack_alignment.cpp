#include "stack_alignment.hpp"

#include <glob.h>
#include <sys/resource.h>
#include <omp.h>
#include <tiffio.h>

#include <algorithm>
#include <exception>
#include <thread>
#include <mutex>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../kernels/cuda_api.hpp"
#include "../src/alignment/apply.hpp"
#include "../src/core/error.hpp"
#include "../src/core/interrupt.hpp"
#include "../src/io/mrc_io.hpp"
#include "../src/core/natural_sort.hpp"
#include "../src/alignment/pair_checks.hpp"
#include "../src/output/report_html.hpp"
#include "../src/io/tiff_io.hpp"
#include "../src/alignment/tilt_geometry.hpp"
#include "../src/io/tilt_angles.hpp"
#include "../src/core/version.hpp"

namespace fs = std::filesystem;

namespace stackalign {

namespace {


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
        plan.input = probe_stack_file(cfg.input.stack);
        plan.name = fs::path(cfg.input.stack).stem().string();
    } else {
        plan.files = expand_files(cfg);
        plan.name = "series";
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

    if (!cfg.input.angles_file.empty()) {
        plan.angles = read_tilt_angles(cfg.input.angles_file);
        if (int(plan.angles.size()) != plan.frames)
            throw InputError(cfg.input.angles_file + ": has " + std::to_string(plan.angles.size()) +
                             " tilt angles but the stack has " + std::to_string(plan.frames) +
                             " frames; give one angle per frame");
    } else if (cfg.input.angles_range) {
        plan.angles = tilt_range((*cfg.input.angles_range)[0], (*cfg.input.angles_range)[1], plan.frames);
        for (double t : plan.angles)
            if (std::fabs(t) > 90)
                throw ConfigError(cfg.where("input.angles") + ": start + step x " + std::to_string(plan.frames - 1) +
                                  " frames reaches " + std::to_string(t) + " degrees, outside -90..90");
    }

    plan.excluded.assign(plan.frames, false);
    for (int v : cfg.alignment.exclude) {
        if (v >= plan.frames)
            throw ConfigError(cfg.where("alignment.exclude") + ": view " + std::to_string(v) +
                              " does not exist; the stack has views 0.." + std::to_string(plan.frames - 1));
        plan.excluded[v] = true;
    }
    for (int v = 0; v < plan.frames; ++v)
        if (!plan.excluded[v]) plan.kept.push_back(v);
    if (plan.kept.size() < 2)
        throw ConfigError(cfg.where("alignment.exclude") + ": leaves " + std::to_string(plan.kept.size()) +
                          " view; alignment needs at least 2");

    if (cfg.alignment.reference) {
        plan.reference = *cfg.alignment.reference;
        plan.reference_why = "set in the config";
        if (plan.reference >= plan.frames)
            throw ConfigError(cfg.where("alignment.reference") + ": frame " + std::to_string(plan.reference) +
                              " does not exist; the stack has frames 0.." + std::to_string(plan.frames - 1));
        if (plan.excluded[plan.reference])
            throw ConfigError(cfg.where("alignment.reference") + ": view " + std::to_string(plan.reference) +
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
    plan.stretch = !plan.angles.empty() && cfg.alignment.cosine_stretch;
    plan.output_format = cfg.output.format == "auto" ? plan.input.format : cfg.output.format;
    if (plan.output_format == "mrc" && plan.type == PixelType::i32)
        throw ConfigError(cfg.where("output.format") + ": 32-bit integer frames have no MRC mode; use format = \"tiff\"");

    plan.setup.preprocess = {cfg.preprocess.mean_radius, cfg.preprocess.sobel, float(cfg.preprocess.threshold),
                             cfg.preprocess.bins};
    plan.setup.search = resolve_window(cfg, plan.width, plan.height);
    apply_search_choice(cfg.search, plan.setup);
    plan.setup.gpu = cfg.device.gpu;
    plan.backend = choose_backend(opt.backend.value_or(cfg.device.backend), cfg.device.gpu);
    return plan;
}

std::string describe_plan(const Config& cfg, const StackPlan& plan) {
    const MiSearchParams& s = plan.setup.search;
    std::ostringstream o;
    o << "input:      " << (cfg.input.stack.empty() ? cfg.input.files : cfg.input.stack) << " (" << plan.input.format;
    if (plan.input.pixel_size > 0) o << ", " << plan.input.pixel_size << " A/pixel";
    o << ")\n"
      << "frames:     " << plan.frames << " x " << plan.width << "x" << plan.height << " " << to_string(plan.type)
      << "\n";
    if (!plan.angles.empty())
        o << "tilt:       " << plan.angles.front() << " .. " << plan.angles.back() << " degrees, axis "
          << cfg.alignment.tilt_axis << " degrees from y, cosine stretch " << (plan.stretch ? "on" : "off") << "\n";
    if (plan.kept.size() < std::size_t(plan.frames)) {
        o << "excluded:   ";
        for (int v = 0, first = 1; v < plan.frames; ++v)
            if (plan.excluded[v]) o << (first ? "" : ", ") << v, first = 0;
        o << " (bridged; their shifts interpolated)\n";
    }
    if (plan.setup.method == SearchMethod::mtb_projection)
        o << "method:     mtb-projection (median-threshold bitmaps ignoring " << cfg.search.mtb_band
          << "% of pixels either side of the median; row/column projections compared by NCC)\n";
    else
        o << "preprocess: mean_radius " << cfg.preprocess.mean_radius << ", sobel " << (cfg.preprocess.sobel ? "on" : "off")
          << ", threshold " << cfg.preprocess.threshold << ", bins " << cfg.preprocess.bins << "\n"
          << "metric:     " << cfg.search.metric << ", histogram " << cfg.search.histogram << "\n";
    o << "search:     window " << s.window.width << "x" << s.window.height << " at (" << s.window.x << ","
      << s.window.y << "), shifts +-" << s.max_shift.x << " (" << s.candidates() << " candidates), subpixel "
      << (cfg.search.subpixel ? "on" : "off") << "\n"
      << "reference:  frame " << plan.reference << " (" << plan.reference_why << ")\n"
      << "flags:      weak peak below sharpness " << cfg.alignment.min_sharpness << ", outlier above robust z "
      << cfg.alignment.outlier_z << "; flagged pairs: " << cfg.alignment.on_outlier << "\n"
      << "backend:    " << describe_backend(plan.backend, plan.setup.gpu) << "\n"
      << "output:     " << cfg.output.dir << " (" << plan.output_format << ")\n";
    return o.str();
}

namespace {

// The integer peak, refined per axis by a parabola through its neighbours.
Shift peak_shift(const MiPeak& p, bool subpixel) {
    Shift d{double(p.dx), double(p.dy)};
    if (subpixel) {
        d.dx += parabolic_offset(p.around[1][0], p.around[1][1], p.around[1][2]);
        d.dy += parabolic_offset(p.around[0][1], p.around[1][1], p.around[2][1]);
    }
    return d;
}

// What a searcher slot holds: a view, as read or stretched for one pair.
struct SlotContent {
    int view = -1;
    int stretched_for_pair = -1;  // -1: the view as read
    bool operator==(const SlotContent& o) const { return view == o.view && stretched_for_pair == o.stretched_for_pair; }
};

// Searches every pair of neighbouring kept views, outward from the
// reference so that each pair has one view already placed: with cosine
// stretching, the higher-tilt view is stretched about the placed view's
// tilt-axis position (its offset from the image centre), which makes the
// unstretched shift exact whichever view is stretched (docs/tilt_series.md).
std::vector<PairResult> search_pairs(const Config& cfg, const StackPlan& plan, FrameReader& frames,
                                     PairSearcher& searcher, StackResult& result, double& t_pre, double& t_search,
                                     Verbosity verbosity) {
    const std::vector<int>& kept = plan.kept;
    const int pairs = int(kept.size()) - 1;
    const int r = int(std::find(kept.begin(), kept.end(), plan.reference) - kept.begin());
    std::vector<int> order;
    for (int i = r; i < pairs; ++i) order.push_back(i);
    for (int i = r - 1; i >= 0; --i) order.push_back(i);

    std::vector<PairResult> out(pairs);
    std::vector<Shift> placed(plan.frames);  // offsets of views already chained to the reference
    SlotContent slots[2];
    const double cx = (plan.width - 1) / 2.0, cy = (plan.height - 1) / 2.0;
    Progress progress("pairs", pairs, verbosity);
    for (int n = 0; n < pairs; ++n) {
        throw_if_interrupted();
        const int i = order[n];
        PairResult& pr = out[i];
        pr.ref = kept[i];
        pr.mov = kept[i + 1];
        const bool right = i >= r;
        const int near = right ? pr.ref : pr.mov, far = right ? pr.mov : pr.ref;
        Stretch st;
        int stretched = -1;
        if (plan.stretch) {
            const bool ref_lower = std::fabs(plan.angles[pr.ref]) <= std::fabs(plan.angles[pr.mov]);
            const int low = ref_lower ? pr.ref : pr.mov, high = ref_lower ? pr.mov : pr.ref;
            st = cosine_stretch(plan.angles[low], plan.angles[high], cfg.alignment.tilt_axis);
            if (!st.identity()) {
                stretched = high;
                pr.stretch = std::cos(plan.angles[low] * M_PI / 180) / std::cos(plan.angles[high] * M_PI / 180);
            }
        }
        // Puts `want` in a slot (not `keep`) unless one holds it already.
        auto ensure = [&](const SlotContent& want, int keep) {
            for (int k = 0; k < 2; ++k)
                if (slots[k] == want) return k;
            const int k = keep == 0 ? 1 : 0;
            const auto t = Clock::now();
            if (want.stretched_for_pair < 0) {
                searcher.load(k, *frames.read(want.view));
            } else {
                const LinearTransform about{st.s[0], st.s[1], st.s[2], st.s[3], 0, 0, cx + placed[near].dx, cy + placed[near].dy};
                const auto frame = frames.read(want.view);
                const RawFrame& f = *frame;
                searcher.load(k, transform_frame(f, about, f.mean()));
            }
            t_pre += seconds_since(t);
            slots[k] = want;
            return k;
        };
        const int ref_slot = ensure({pr.ref, stretched == pr.ref ? i : -1}, -1);
        const int mov_slot = ensure({pr.mov, stretched == pr.mov ? i : -1}, ref_slot);
        const auto t = Clock::now();
        pr.peak = searcher.search(ref_slot, mov_slot);
        t_search += seconds_since(t);
        if (n == 0 && searcher.describe() != result.backend_description) {
            result.backend_description = searcher.describe();  // a strategy auto-tuned on this pair
            log_line(verbosity, "backend: " + result.backend_description);
        }
        pr.measured = peak_shift(pr.peak, cfg.search.subpixel);
        pr.shift = pr.measured;
        if (stretched == far) st.unstretch(pr.shift.dx, pr.shift.dy);
        placed[far] = right ? Shift{placed[near].dx + pr.shift.dx, placed[near].dy + pr.shift.dy}
                            : Shift{placed[near].dx - pr.shift.dx, placed[near].dy - pr.shift.dy};
        progress.step(n + 1);
    }
    progress.finish();
    return out;
}

// One long series over several GPUs: the pairs are split into contiguous
// runs, one per GPU, each searched by its own searcher (frames preprocessed
// on that GPU). Pairs are independent without cosine stretching, so every
// pair gets exactly what one GPU would give; with stretching each pair needs
// its neighbour's placed offset and the search stays on one GPU.
std::vector<PairResult> search_pairs_on_gpus(const Config& cfg, const StackPlan& plan, FrameReader& frames,
                                             const std::vector<int>& gpus, StackResult& result, double& t_pre,
                                             double& t_search, Verbosity verbosity) {
    const std::vector<int>& kept = plan.kept;
    const int pairs = int(kept.size()) - 1, workers = std::min<int>(int(gpus.size()), pairs);
    std::vector<PairResult> out(pairs);
    std::vector<std::exception_ptr> errors(workers);
    std::vector<double> pre(workers, 0), search(workers, 0);
    std::vector<std::string> described(workers);
    std::mutex progress_lock;
    Progress progress("pairs", pairs, verbosity);
    int finished = 0;
    auto worker = [&](int w) {
        try {
            SearchSetup setup = plan.setup;
            setup.gpu = gpus[w];
            std::unique_ptr<PairSearcher> searcher = make_pair_searcher(Backend::cuda, setup);
            const int first = pairs * w / workers, last = pairs * (w + 1) / workers;
            int in_slot[2] = {-1, -1};
            for (int i = first; i < last; ++i) {
                throw_if_interrupted();
                PairResult& pr = out[i];
                pr.ref = kept[i];
                pr.mov = kept[i + 1];
                auto ensure = [&](int view, int keep) {
                    for (int k = 0; k < 2; ++k)
                        if (in_slot[k] == view) return k;
                    const int k = keep == 0 ? 1 : 0;
                    const auto t = Clock::now();
                    searcher->load(k, *frames.read(view));
                    pre[w] += seconds_since(t);
                    in_slot[k] = view;
                    return k;
                };
                const int ref_slot = ensure(pr.ref, -1), mov_slot = ensure(pr.mov, ref_slot);
                const auto t = Clock::now();
                pr.peak = searcher->search(ref_slot, mov_slot);
                search[w] += seconds_since(t);
                pr.measured = peak_shift(pr.peak, cfg.search.subpixel);
                pr.shift = pr.measured;
                const std::lock_guard<std::mutex> hold(progress_lock);
                progress.step(++finished);
            }
            described[w] = searcher->describe();
        } catch (...) {
            errors[w] = std::current_exception();
        }
    };
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) threads.emplace_back(worker, w);
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    progress.finish();
    for (int w = 0; w < workers; ++w) {
        t_pre += pre[w];  // summed over the GPUs
        t_search += search[w];
    }
    result.backend_description = std::to_string(workers) + " GPUs, pairs split between them; GPU " +
                                 std::to_string(gpus[0]) + ": " + described[0];
    log_line(verbosity, "backend: " + result.backend_description);
    return out;
}

// Flags weak peaks and outlying shifts; with on_outlier = "interpolate"
// replaces the flagged pairs' shifts from their unflagged neighbours.
void check_pairs(const Config& cfg, std::vector<PairResult>& pairs, Verbosity verbosity) {
    std::vector<Shift> per_view;
    for (const PairResult& p : pairs) per_view.push_back({p.shift.dx / (p.mov - p.ref), p.shift.dy / (p.mov - p.ref)});
    const std::vector<double> z = robust_z(per_view);
    std::vector<bool> flagged(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        PairResult& p = pairs[i];
        p.z = z[i];
        p.weak = p.peak.sharpness() < cfg.alignment.min_sharpness;
        p.outlier = p.z > cfg.alignment.outlier_z;
        flagged[i] = p.weak || p.outlier;
        if (!flagged[i]) continue;
        std::ostringstream m;
        m.precision(3);
        m << "pair " << p.ref << "-" << p.mov << ":";
        if (p.weak) m << " weak MI peak (sharpness " << p.peak.sharpness() << " < " << cfg.alignment.min_sharpness << ")";
        if (p.outlier) m << " outlying shift (" << p.shift.dx << ", " << p.shift.dy << "), robust z " << p.z;
        m << (cfg.alignment.on_outlier == "interpolate" ? "; shift interpolated" : "; kept");
        log_line(verbosity, m.str());
    }
    if (cfg.alignment.on_outlier != "interpolate") return;
    interpolate_flagged(per_view, flagged);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        if (!flagged[i]) continue;
        const int gap = pairs[i].mov - pairs[i].ref;
        pairs[i].shift = {per_view[i].dx * gap, per_view[i].dy * gap};
        pairs[i].interpolated = true;
    }
}

std::string pair_status(const PairResult& p) {
    std::string s = p.weak && p.outlier ? "weak peak; outlier" : p.weak ? "weak peak" : p.outlier ? "outlier" : "ok";
    return p.interpolated ? s + " (interpolated)" : s;
}

ReportInput report_input(const Config& cfg, const StackPlan& plan, const StackResult& result, FrameReader& frames) {
    ReportInput r;
    r.title = fs::path(plan.files[0]).filename().string() + (plan.files.size() > 1 ? " ..." : "");
    std::ostringstream size;
    size << plan.frames << " views, " << plan.width << "x" << plan.height << " " << to_string(plan.type) << " ("
         << plan.input.format << ")";
    r.summary.push_back({"input", size.str()});
    if (!plan.angles.empty()) {
        std::ostringstream t;
        t << plan.angles.front() << " to " << plan.angles.back() << " degrees; axis " << cfg.alignment.tilt_axis
          << " degrees from y; cosine stretch " << (plan.stretch ? "on" : "off");
        r.summary.push_back({"tilt", t.str()});
    }
    r.summary.push_back({"reference", "view " + std::to_string(plan.reference) + " (" + plan.reference_why + ")"});
    if (plan.kept.size() < std::size_t(plan.frames))
        r.summary.push_back({"excluded", std::to_string(plan.frames - int(plan.kept.size())) +
                                             " views (bridged; offsets interpolated)"});
    const MiSearchParams& s = plan.setup.search;
    r.summary.push_back({"search", "window " + std::to_string(s.window.width) + "x" + std::to_string(s.window.height) +
                                       ", shifts +-" + std::to_string(s.max_shift.x) + ", " +
                                       std::to_string(cfg.preprocess.bins) + " bins"});
    r.summary.push_back({"backend", result.backend_description});
    r.frames = result.frames;
    for (const PairResult& p : result.pairs)
        r.pairs.push_back({p.ref, p.mov, p.peak.sharpness(), p.weak || p.outlier, pair_status(p)});
    r.min_sharpness = cfg.alignment.min_sharpness;
    r.reference = plan.reference;
    r.montage_views = montage_views(plan.kept, plan.reference);
    for (int v : r.montage_views) {
        const auto frame = frames.read(v);
        const Shift& o = result.frames[v].offset;
        r.before.push_back(*frame);
        r.after.push_back(shift_frame(*frame, o.dx, o.dy, frame->mean()));
    }
    return r;
}

}  // namespace

StackResult run_stack(const Config& cfg, const RunOptions& opt) {
    const auto t_start = Clock::now();
    if (opt.threads > 0) omp_set_num_threads(opt.threads);
    const StackPlan plan = plan_stack(cfg, opt);
    const std::string run_json = start_output_dir(cfg.output.dir);

    log_line(opt.verbosity, "aligning " + std::to_string(plan.frames) + " frames of " + std::to_string(plan.width) +
                                "x" + std::to_string(plan.height) + " " + to_string(plan.type) + " from " +
                                plan.files[0] + (plan.files.size() > 1 ? " ..." : ""));

    // Frames are read as the steps need them and kept while they fit in the
    // cache: a series larger than memory streams (read, preprocess and apply
    // each touch a frame or two at a time).
    auto t = Clock::now();
    const std::size_t cache = opt.frame_cache_bytes ? opt.frame_cache_bytes : default_frame_cache_bytes();
    FrameReader frames(plan.files, cache);
    const double t_read = seconds_since(t);  // opening; frame reads count in the step that needs them

    StackResult result;
    double t_pre = 0, t_search = 0;
    const std::vector<int> gpus = resolve_gpus(cfg.device, plan.backend);
    if (gpus.size() > 1 && !plan.stretch && plan.kept.size() > 2) {
        result.pairs = search_pairs_on_gpus(cfg, plan, frames, gpus, result, t_pre, t_search, opt.verbosity);
    } else {
        std::unique_ptr<PairSearcher> searcher = make_pair_searcher(plan.backend, plan.setup);
        result.backend_description = searcher->describe();
        log_line(opt.verbosity, "backend: " + result.backend_description);
        result.pairs = search_pairs(cfg, plan, frames, *searcher, result, t_pre, t_search, opt.verbosity);
    }
    check_pairs(cfg, result.pairs, opt.verbosity);

    std::vector<Shift> chain;
    for (const PairResult& p : result.pairs) chain.push_back(p.shift);
    const std::vector<Shift> offsets = chain_offsets(plan.frames, plan.kept, chain, plan.reference);
    const double nan = std::nan("");
    result.frames.resize(plan.frames);
    for (int k = 0; k < plan.frames; ++k) {
        FrameResult& f = result.frames[k];
        f.offset = offsets[k];
        f.tilt = plan.angles.empty() ? nan : plan.angles[k];
        f.neighbour = plan.excluded[k] ? Shift{nan, nan} : Shift{};
        f.mi = f.sharpness = nan;
        f.status = plan.excluded[k] ? "excluded (interpolated)" : k == plan.reference ? "reference" : "ok";
    }
    for (const PairResult& p : result.pairs) {
        FrameResult& f = result.frames[p.mov];
        f.neighbour = p.shift;
        f.mi = p.peak.mi;
        f.sharpness = p.peak.sharpness();
        if (p.weak || p.outlier) f.status = (p.mov == plan.reference ? "reference; " : "") + pair_status(p);
    }

    throw_if_interrupted();
    double t_apply = 0, t_write = 0;
    const fs::path dir(cfg.output.dir);
    std::vector<std::string> written;
    t = Clock::now();
    if (cfg.output.aligned) {
        const std::string name = plan.output_format == "mrc" ? "aligned.mrc" : "aligned.tif";
        write_atomically((dir / name).string(), [&](const std::string& tmp) {
            FrameWriter w(tmp, plan.output_format, plan.input, plan.frames, plan.width, plan.height, plan.type);
            for (int k = 0; k < plan.frames; ++k) {
                throw_if_interrupted();
                const auto frame = frames.read(k);
                const auto t_k = Clock::now();
                const RawFrame moved = shift_frame(*frame, offsets[k].dx, offsets[k].dy, frame->mean());
                t_apply += seconds_since(t_k);
                w.append(moved);
            }
            w.close();
        });
        written.push_back(name);
    }
    write_text_atomically((dir / "shifts.csv").string(), shifts_csv(result.frames));
    write_text_atomically((dir / "transforms.xf").string(), imod_xf(result.frames));
    write_text_atomically((dir / (plan.name + ".prexf")).string(), imod_prexf(result.frames));
    write_text_atomically((dir / (plan.name + ".prexg")).string(), imod_xf(result.frames));
    for (const char* f : {"shifts.csv", "transforms.xf"}) written.push_back(f);
    written.push_back(plan.name + ".prexf");
    written.push_back(plan.name + ".prexg");
    if (cfg.output.report) {
        write_text_atomically((dir / "report.html").string(),
                              stack_report_html(report_input(cfg, plan, result, frames)));
        written.push_back("report.html");
    }
    t_write += seconds_since(t);

    nlohmann::ordered_json j = run_json_header(cfg);
    const AlignmentConfig& al = cfg.alignment;
    j["config"] = {
        {"mode", cfg.mode},
        {"input", {{"stack", cfg.input.stack}, {"files", cfg.input.files}, {"angles", cfg.input.angles_file}}},
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
          {"method", cfg.search.method},
          {"histogram", cfg.search.histogram},
          {"metric", cfg.search.metric},
          {"mtb_band", cfg.search.mtb_band}}},
        {"alignment",
         {{"reference", plan.reference},
          {"reference_chosen_by", plan.reference_why},
          {"tilt_axis", al.tilt_axis},
          {"cosine_stretch", plan.stretch},
          {"exclude", al.exclude},
          {"on_outlier", al.on_outlier},
          {"min_sharpness", al.min_sharpness},
          {"outlier_z", al.outlier_z}}},
        {"output",
         {{"dir", cfg.output.dir}, {"aligned", cfg.output.aligned}, {"format", plan.output_format}, {"report", cfg.output.report}}},
        {"device", {{"backend", to_string(plan.backend)}, {"gpu", cfg.device.gpu}}}};
    j["input"] = {{"files", plan.files},
                  {"format", plan.input.format},
                  {"frames", plan.frames},
                  {"width", plan.width},
                  {"height", plan.height},
                  {"pixel_type", to_string(plan.type)},
                  {"pixel_size_angstrom", plan.input.pixel_size}};
    if (!plan.angles.empty()) j["input"]["tilt_angles"] = plan.angles;
    j["outputs"] = written;
    j["backend"] = result.backend_description;
    j["threads"] = omp_get_max_threads();
    j["pairs"] = nlohmann::json::array();
    for (const PairResult& p : result.pairs)
        j["pairs"].push_back({{"ref", p.ref},
                              {"mov", p.mov},
                              {"dx", p.peak.dx},
                              {"dy", p.peak.dy},
                              {"subpixel_dx", p.measured.dx},
                              {"subpixel_dy", p.measured.dy},
                              {"stretch", p.stretch},
                              {"shift_dx", p.shift.dx},
                              {"shift_dy", p.shift.dy},
                              {"mi", p.peak.mi},
                              {"sharpness", p.peak.sharpness()},
                              {"robust_z", p.z},
                              {"status", pair_status(p)}});
    const int pairs = int(result.pairs.size());
    j["seconds"] = {{"read", t_read},        {"preprocess", t_pre}, {"search", t_search},
                    {"apply", t_apply},      {"write", t_write},    {"total", seconds_since(t_start)}};
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    j["peak_memory_mb"] = double(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
    j["frame_cache_mb"] = double(cache) / (1 << 20);
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
