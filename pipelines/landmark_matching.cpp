#include "landmark_matching.hpp"

#include <omp.h>
#include <tiffio.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../src/core/error.hpp"
#include "../src/core/interrupt.hpp"
#include "../src/output/output_files.hpp"
#include "../src/alignment/accumulate.hpp"
#include "../src/core/version.hpp"

namespace fs = std::filesystem;

namespace stackalign {
namespace {


Point3 to_voxels(const Point3& p, const Config& cfg) {
    if (!cfg.landmarks.voxel_size) return p;
    const auto& s = *cfg.landmarks.voxel_size;
    return {p[0] / s[0], p[1] / s[1], p[2] / s[2]};
}
Point3 from_voxels(const Point3& v, const Config& cfg) {
    if (!cfg.landmarks.voxel_size) return v;
    const auto& s = *cfg.landmarks.voxel_size;
    return {v[0] * s[0], v[1] * s[1], v[2] * s[2]};
}

std::string dims(const TiffInfo& t) {
    return std::to_string(t.width) + "x" + std::to_string(t.height) + "x" + std::to_string(t.pages) + " " +
           to_string(t.type);
}

}  // namespace

PointWindow place_window(const Point3& v, const MiSearchParams& p, const TiffInfo& source, const TiffInfo& target) {
    PointWindow w;
    const SearchWindow& s = p.window;
    // The window's centre voxel is the point rounded; even sizes reach one further up.
    w.x = int(std::lround(v[0])) - (s.width - 1) / 2;
    w.y = int(std::lround(v[1])) - (s.height - 1) / 2;
    w.z = int(std::lround(v[2])) - (s.depth - 1) / 2;
    MiSearchParams at = p;
    at.window.x = w.x;
    at.window.y = w.y;
    at.window.z = w.z;
    MiSearchParams still = at;
    still.max_shift = {0, 0, 0};
    if (std::string why = window_overflow(still, source.width, source.height, source.pages); !why.empty())
        w.skip = "skipped: source window leaves the source volume (" + why + ")";
    else if (std::string why = window_overflow(at, target.width, target.height, target.pages); !why.empty())
        w.skip = "skipped: search region leaves the target volume (" + why + ")";
    return w;
}

LandmarkPlan plan_landmarks(const Config& cfg, const RunOptions& opt) {
    const LandmarksConfig& l = cfg.landmarks;
    LandmarkPlan plan;
    plan.source = probe_tiff(l.source);
    plan.target = probe_tiff(l.target);
    if (!std::ifstream(l.points)) throw InputError(cfg.where("landmarks.points") + ": cannot open \"" + l.points + "\"");
    plan.points = read_points(l.points, &plan.format);
    const SearchWindow window{0, 0, 0, l.window[0], l.window[1], l.window[2]};
    for (const auto& [vol, key] : {std::pair<const TiffInfo*, const char*>{&plan.source, "source"}, {&plan.target, "target"}})
        if (window.width > vol->width || window.height > vol->height || window.depth > vol->pages)
            throw ConfigError(cfg.where("landmarks.window") + ": window " + std::to_string(window.width) + "x" +
                              std::to_string(window.height) + "x" + std::to_string(window.depth) +
                              " is larger than the " + key + " volume (" + dims(*vol) + ")");
    plan.setup.preprocess = {cfg.preprocess.mean_radius, cfg.preprocess.sobel, float(cfg.preprocess.threshold),
                             cfg.preprocess.bins};
    plan.setup.search.bins = cfg.preprocess.bins;
    plan.setup.search.window = window;
    plan.setup.search.max_shift = {l.max_shift[0], l.max_shift[1], l.max_shift[2]};
    apply_search_choice(cfg.search, plan.setup);
    plan.setup.gpu = cfg.device.gpu;
    plan.backend = choose_backend(opt.backend.value_or(cfg.device.backend), cfg.device.gpu);
    plan.units = l.voxel_size ? "voxel_size units (x, y, z scaled by [landmarks] voxel_size)" : "voxels";
    return plan;
}

std::string describe_landmark_plan(const Config& cfg, const LandmarkPlan& plan) {
    const MiSearchParams& s = plan.setup.search;
    int searchable = 0;
    for (const NamedPoint& p : plan.points)
        searchable += place_window(to_voxels(p.p, cfg), s, plan.source, plan.target).skip.empty();
    std::ostringstream o;
    o << "mode:       landmarks\n"
      << "source:     " << cfg.landmarks.source << " (" << dims(plan.source) << ")\n"
      << "target:     " << cfg.landmarks.target << " (" << dims(plan.target) << ")\n"
      << "points:     " << cfg.landmarks.points << " (" << to_string(plan.format) << ", " << plan.points.size()
      << " points, " << searchable << " searchable, units " << plan.units << ")\n"
      << "preprocess: mean_radius " << cfg.preprocess.mean_radius << ", sobel " << (cfg.preprocess.sobel ? "on" : "off")
      << " (3D), threshold " << cfg.preprocess.threshold << ", bins " << cfg.preprocess.bins << "\n"
      << "search:     window " << s.window.width << "x" << s.window.height << "x" << s.window.depth << ", shifts +-["
      << s.max_shift.x << ", " << s.max_shift.y << ", " << s.max_shift.z << "] (" << s.candidates()
      << " candidates per point), subpixel " << (cfg.landmarks.subpixel ? "on" : "off") << "\n"
      << "fit:        " << cfg.output.fit << "\n"
      << "backend:    " << describe_backend(plan.backend, plan.setup.gpu) << "\n"
      << "output:     " << cfg.output.dir << "\n";
    return o.str();
}

std::string matches_csv(const std::vector<LandmarkMatch>& matches) {
    std::ostringstream o;
    o << "name,src_x,src_y,src_z,dst_x,dst_y,dst_z,dx,dy,dz,mi,sharpness,status\n";
    for (const LandmarkMatch& m : matches) {
        o << csv_field(m.name);
        for (double v : m.src) o << "," << format_number(v);
        if (m.matched()) {
            for (double v : m.dst) o << "," << format_number(v);
            for (int k = 0; k < 3; ++k) o << "," << format_number(m.dst[k] - m.src[k]);
            o << "," << format_number(m.mi) << "," << format_number(m.sharpness);
        } else {
            o << ",,,,,,,,";
        }
        o << "," << csv_field(m.status) << "\n";
    }
    return o.str();
}

LandmarkResult run_landmarks(const Config& cfg, const RunOptions& opt) {
    const auto t_start = Clock::now();
    if (opt.threads > 0) omp_set_num_threads(opt.threads);
    const LandmarkPlan plan = plan_landmarks(cfg, opt);
    const std::string run_json = start_output_dir(cfg.output.dir);
    const fs::path dir(cfg.output.dir);

    log_line(opt.verbosity, "matching " + std::to_string(plan.points.size()) + " landmarks of " + cfg.landmarks.source +
                                " (" + dims(plan.source) + ") in " + cfg.landmarks.target + " (" + dims(plan.target) + ")");
    auto t = Clock::now();
    const RawFrame source = read_tiff_volume(cfg.landmarks.source);
    const RawFrame target = read_tiff_volume(cfg.landmarks.target);
    const double t_read = seconds_since(t);

    std::unique_ptr<PairSearcher> searcher = make_pair_searcher(plan.backend, plan.setup);
    LandmarkResult result;
    result.backend_description = searcher->describe();
    log_line(opt.verbosity, "backend: " + result.backend_description);
    t = Clock::now();
    searcher->load(0, source);
    searcher->load(1, target);
    const double t_pre = seconds_since(t);

    t = Clock::now();
    const int n = int(plan.points.size());
    result.matches.resize(n);
    std::vector<int> searchable;
    std::vector<WindowCorner> corners;
    std::vector<Point3> voxels(n);
    for (int i = 0; i < n; ++i) {
        LandmarkMatch& m = result.matches[i];
        m.name = plan.points[i].name;
        m.src = plan.points[i].p;
        voxels[i] = to_voxels(m.src, cfg);
        const PointWindow w = place_window(voxels[i], plan.setup.search, plan.source, plan.target);
        if (w.skip.empty()) {
            searchable.push_back(i);
            corners.push_back({w.x, w.y, w.z});
        } else {
            m.status = w.skip;
            log_line(opt.verbosity, "point " + m.name + ": " + w.skip);
        }
    }
    // Points go to the searcher in groups: large enough to fill a GPU many
    // times over, small enough that progress moves on a long CPU run.
    constexpr int kPointsPerGroup = 32;
    const int to_search = int(searchable.size());
    Progress progress("points", to_search, opt.verbosity);
    for (int first = 0; first < to_search; first += kPointsPerGroup) {
        throw_if_interrupted();
        const int count = std::min(kPointsPerGroup, to_search - first);
        const std::vector<MiPeak> peaks = searcher->search_windows(
            0, 1, std::vector<WindowCorner>(corners.begin() + first, corners.begin() + first + count));
        if (first == 0 && searcher->describe() != result.backend_description) {
            result.backend_description = searcher->describe();  // a strategy auto-tuned on the first point
            log_line(opt.verbosity, "backend: " + result.backend_description);
        }
        for (int k = 0; k < count; ++k) {
            const MiPeak& peak = peaks[k];
            const Point3& v = voxels[searchable[first + k]];
            LandmarkMatch& m = result.matches[searchable[first + k]];
            Point3 d = {v[0] + peak.dx, v[1] + peak.dy, v[2] + peak.dz};
            if (cfg.landmarks.subpixel) {
                d[0] += parabolic_offset(peak.around[1][0], peak.around[1][1], peak.around[1][2]);
                d[1] += parabolic_offset(peak.around[0][1], peak.around[1][1], peak.around[2][1]);
                d[2] += parabolic_offset(peak.around_z[0], peak.around_z[1], peak.around_z[2]);
            }
            m.dst = from_voxels(d, cfg);
            m.peak = {peak.dx, peak.dy, peak.dz};
            m.mi = peak.mi;
            m.sharpness = peak.sharpness();
            m.status = "ok";
        }
        progress.step(first + count);
    }
    progress.finish();
    searcher.reset();
    const double t_search = seconds_since(t);

    // Fit on the matched points, in file units.
    std::vector<int> matched;
    for (int i = 0; i < n; ++i)
        if (result.matches[i].matched()) matched.push_back(i);
    if (cfg.output.fit != "none") {
        std::vector<Point3> s, d;
        for (int i : matched) {
            s.push_back(result.matches[i].src);
            d.push_back(result.matches[i].dst);
        }
        try {
            result.fit = fit_landmarks(s, d, cfg.output.fit);
            for (std::size_t k = 0; k < matched.size(); ++k)
                if (result.fit->outlier[k]) result.matches[matched[k]].status = "outlier";
        } catch (const InputError& e) {
            result.fit_error = e.what();
            log_line(opt.verbosity, std::string("warning: no ") + cfg.output.fit + " fit: " + e.what());
        }
    }

    t = Clock::now();
    std::vector<Point3> inlier_src, inlier_dst, all_src, all_dst;
    std::vector<std::string> matched_names;
    std::vector<bool> active;
    for (int i : matched) {
        const LandmarkMatch& m = result.matches[i];
        matched_names.push_back(m.name);
        all_src.push_back(m.src);
        all_dst.push_back(m.dst);
        active.push_back(m.status == "ok");
        if (m.status == "ok") {
            inlier_src.push_back(m.src);
            inlier_dst.push_back(m.dst);
        }
    }
    write_text_atomically((dir / "matches.csv").string(), matches_csv(result.matches));
    write_text_atomically((dir / "matches.landmarkAscii").string(), amira_landmarks(inlier_src, inlier_dst));
    write_text_atomically((dir / "matches_bigwarp.csv").string(), bigwarp_csv(matched_names, active, all_src, all_dst));
    const std::string units = cfg.landmarks.voxel_size ? "voxel_size units" : "voxels";
    if (cfg.output.fit != "none")
        write_text_atomically((dir / "fit.txt").string(),
                              result.fit ? fit_report(*result.fit, matched_names, units)
                                         : "# " + cfg.output.fit + " fit not possible: " + result.fit_error + "\n");
    const double t_write = seconds_since(t);

    int ok = 0, outliers = 0;
    for (const LandmarkMatch& m : result.matches) ok += m.status == "ok", outliers += m.status == "outlier";
    nlohmann::ordered_json j = run_json_header(cfg);
    const LandmarksConfig& l = cfg.landmarks;
    j["config"] = {{"mode", cfg.mode},
                   {"landmarks",
                    {{"source", l.source},
                     {"target", l.target},
                     {"points", l.points},
                     {"window", l.window},
                     {"max_shift", l.max_shift},
                     {"voxel_size", l.voxel_size ? nlohmann::json(*l.voxel_size) : nlohmann::json(nullptr)},
                     {"subpixel", l.subpixel}}},
                   {"preprocess",
                    {{"mean_radius", cfg.preprocess.mean_radius},
                     {"sobel", cfg.preprocess.sobel},
                     {"threshold", cfg.preprocess.threshold},
                     {"bins", cfg.preprocess.bins}}},
                   {"search", {{"histogram", cfg.search.histogram}, {"metric", cfg.search.metric}}},
                   {"output", {{"dir", cfg.output.dir}, {"fit", cfg.output.fit}}},
                   {"device", {{"backend", to_string(plan.backend)}, {"gpu", cfg.device.gpu}}}};
    j["input"] = {{"source", {{"width", plan.source.width}, {"height", plan.source.height}, {"depth", plan.source.pages},
                              {"pixel_type", to_string(plan.source.type)}}},
                  {"target", {{"width", plan.target.width}, {"height", plan.target.height}, {"depth", plan.target.pages},
                              {"pixel_type", to_string(plan.target.type)}}},
                  {"points_format", to_string(plan.format)},
                  {"points", n}};
    j["points"] = {{"matched", ok + outliers}, {"outliers", outliers}, {"skipped", n - ok - outliers}};
    if (result.fit) j["fit"] = {{"kind", result.fit->kind}, {"matrix", result.fit->m}, {"rms", result.fit->rms},
                                {"sigma", result.fit->sigma}, {"outliers", outliers}};
    else if (!result.fit_error.empty()) j["fit"] = {{"error", result.fit_error}};
    j["backend"] = result.backend_description;
    j["threads"] = omp_get_max_threads();
    j["seconds"] = {{"read", t_read}, {"preprocess", t_pre}, {"search", t_search}, {"write", t_write},
                    {"total", seconds_since(t_start)}};
    j["voxel_updates_per_second"] =
        t_search > 0 ? double(plan.setup.search.window_pixels()) * plan.setup.search.candidates() * to_search / t_search : 0;
    write_text_atomically(run_json, j.dump(2) + "\n");

    std::ostringstream done;
    done.precision(3);
    done << "done in " << seconds_since(t_start) << " s: " << ok + outliers << " of " << n << " points matched";
    if (result.fit) done << ", " << outliers << " outliers, " << cfg.output.fit << " fit rms " << result.fit->rms << " " << units;
    done << " (read " << t_read << ", preprocess " << t_pre << ", search " << t_search << ", write " << t_write
         << "); outputs in " << cfg.output.dir;
    log_line(opt.verbosity, done.str());
    return result;
}

}  // namespace stackalign
