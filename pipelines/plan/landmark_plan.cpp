#include "landmark_plan.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include "../../src/core/error.hpp"
#include "output_guard.hpp"

namespace stackalign {

Point3 LandmarkPlan::to_voxels(const Point3& p) const {
    if (!voxel_size) return p;
    const auto& s = *voxel_size;
    return {p[0] / s[0], p[1] / s[1], p[2] / s[2]};
}

Point3 LandmarkPlan::from_voxels(const Point3& v) const {
    if (!voxel_size) return v;
    const auto& s = *voxel_size;
    return {v[0] * s[0], v[1] * s[1], v[2] * s[2]};
}

std::string dims(const TiffInfo& t) {
    return std::to_string(t.width) + "x" + std::to_string(t.height) + "x" + std::to_string(t.pages) + " " +
           to_string(t.type);
}

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
    check_outputs_spare_inputs(cfg);
    plan.source_path = l.source;
    plan.target_path = l.target;
    plan.points_path = l.points;
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
    plan.setup.search.metric = cfg.search.metric;
    plan.setup.histogram = cfg.search.histogram;
    plan.setup.method = cfg.search.method;
    plan.device = {choose_backend(opt.backend.value_or(cfg.device.backend), cfg.device.gpu), cfg.device.gpu};
    plan.voxel_size = l.voxel_size;
    plan.units = l.voxel_size ? "voxel_size units (x, y, z scaled by [landmarks] voxel_size)" : "voxels";
    plan.subpixel = l.subpixel;
    plan.setup.subpixel = l.subpixel ? Subpixel::parabola : Subpixel::off;  // continuous in 3D: issue #15
    plan.fit = cfg.output.fit;
    plan.output_dir = cfg.output.dir;
    plan.provenance = provenance_of(cfg);
    return plan;
}

std::string describe_landmark_plan(const LandmarkPlan& plan) {
    const MiSearchParams& s = plan.setup.search;
    int searchable = 0;
    for (const NamedPoint& p : plan.points)
        searchable += place_window(plan.to_voxels(p.p), s, plan.source, plan.target).skip.empty();
    std::ostringstream o;
    o << "mode:       landmarks\n"
      << "source:     " << plan.source_path << " (" << dims(plan.source) << ")\n"
      << "target:     " << plan.target_path << " (" << dims(plan.target) << ")\n"
      << "points:     " << plan.points_path << " (" << to_string(plan.format) << ", " << plan.points.size()
      << " points, " << searchable << " searchable, units " << plan.units << ")\n"
      << "preprocess: mean_radius " << plan.setup.preprocess.mean_radius << ", sobel "
      << (plan.setup.preprocess.sobel ? "on" : "off") << " (3D), threshold " << plan.setup.preprocess.threshold
      << ", bins " << plan.setup.preprocess.bins << "\n"
      << "search:     window " << s.window.width << "x" << s.window.height << "x" << s.window.depth << ", shifts +-["
      << s.max_shift.x << ", " << s.max_shift.y << ", " << s.max_shift.z << "] (" << s.candidates()
      << " candidates per point), subpixel " << (plan.subpixel ? "on" : "off") << "\n"
      << "fit:        " << name_of(plan.fit) << "\n"
      << "backend:    " << describe_backend(plan.device.backend, plan.device.gpu) << "\n"
      << "output:     " << plan.output_dir << "\n";
    return o.str();
}

}  // namespace stackalign
