#include "landmark_plan.hpp"
#include "backend_cost.hpp"

#include <omp.h>

#include <algorithm>
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

std::string dims(const VolumeInfo& t) {
    return std::to_string(t.width) + "x" + std::to_string(t.height) + "x" + std::to_string(t.depth) + " " +
           to_string(t.type) + (t.format == VolumeFormat::tiff ? "" : " " + to_string(t.format));
}

std::string format_spacing(const std::array<double, 3>& s) {
    std::ostringstream o;
    o << "[" << s[0] << ", " << s[1] << ", " << s[2] << "]";
    return o.str();
}

PointWindow place_window(const Point3& v, const MiSearchParams& p, const VolumeInfo& source, const VolumeInfo& target) {
    PointWindow w;
    const SearchWindow& s = p.window;
    const char* axis[3] = {"x", "y", "z"};
    const int size[3] = {s.width, s.height, s.depth}, shift[3] = {p.max_shift.x, p.max_shift.y, p.max_shift.z},
              source_extent[3] = {source.width, source.height, source.depth},
              target_extent[3] = {target.width, target.height, target.depth};
    int* start[3] = {&w.x, &w.y, &w.z};
    for (int a = 0; a < 3; ++a) {
        const long centre = std::lround(v[a]);
        // The window's centre voxel is the point rounded; even sizes reach one further up.
        const long centred = centre - (size[a] - 1) / 2;
        // Starts whose window lies in the source, whose search range lies in
        // the target, and which contain the point.
        const long lo = std::max({0L, long(shift[a]), centre - size[a] + 1});
        const long hi = std::min({long(source_extent[a] - size[a]), long(target_extent[a] - size[a] - shift[a]), centre});
        if (lo > hi) {
            w.skip = std::string("skipped: no window of ") + std::to_string(size[a]) + " voxels along " + axis[a] +
                     " that contains " + axis[a] + " = " + std::to_string(centre) + " fits in the source (0.." +
                     std::to_string(source_extent[a] - 1) + ") with its search range +-" + std::to_string(shift[a]) +
                     " in the target (0.." + std::to_string(target_extent[a] - 1) + ")";
            return w;
        }
        *start[a] = int(std::clamp(centred, lo, hi));
        w.moved[a] = int(*start[a] - centred);
    }
    return w;
}

namespace {

// What a header would say of a volume held in memory: no voxel size.
VolumeInfo info_of(const RawFrame& v) {
    VolumeInfo i;
    i.width = v.width, i.height = v.height, i.depth = v.depth, i.type = v.type;
    return i;
}

}  // namespace

LandmarkPlan plan_landmarks(const Config& cfg, const RunOptions& opt, const HeldLandmarks* held) {
    const LandmarksConfig& l = cfg.landmarks;
    LandmarkPlan plan;
    check_outputs_spare_inputs(cfg);
    plan.source_path = l.source;
    plan.target_path = l.target;
    plan.points_path = l.points;
    if (held) {
        plan.inputs_in_memory = true;
        plan.source = info_of(*held->source);
        plan.target = info_of(*held->target);
        plan.points = held->points;
    } else {
        plan.source = probe_volume(l.source);
        plan.target = probe_volume(l.target);
        if (!std::ifstream(l.points)) throw InputError(cfg.where("landmarks.points") + ": cannot open \"" + l.points + "\"");
        plan.points = read_points(l.points, &plan.format);
    }
    const SearchWindow window{0, 0, 0, l.window[0], l.window[1], l.window[2]};
    for (const auto& [vol, key] : {std::pair<const VolumeInfo*, const char*>{&plan.source, "source"}, {&plan.target, "target"}})
        if (window.width > vol->width || window.height > vol->height || window.depth > vol->depth)
            throw ConfigError(cfg.where("landmarks.window") + ": window " + std::to_string(window.width) + "x" +
                              std::to_string(window.height) + "x" + std::to_string(window.depth) +
                              " is larger than the " + key + " volume (" + dims(*vol) + ")");
    plan.setup.preprocess = {cfg.preprocess.mean_radius, cfg.preprocess.sobel, float(cfg.preprocess.threshold),
                             cfg.preprocess.bins};
    plan.setup.search.bins = cfg.preprocess.bins;
    plan.setup.search.window = window;
    plan.setup.search.max_shift = {l.max_shift[0], l.max_shift[1], l.max_shift[2]};
    plan.setup.search.metric = cfg.search.metric;
    // "auto" (the landmarks' default): per point, NCC where the windows'
    // values are linearly related (|r| >= 0.9 at the integer peak), else
    // `metric`. On the real zebrafish volume moved by four rigid motions
    // (`python3 bench/landmark_raw.py`), raw matches' median error: MI 0.173
    // voxel, NCC 0.104, NCC + parabola 0.168.
    plan.setup.refine_auto = !cfg.search.refine_metric || *cfg.search.refine_metric == RefineMetric::automatic;
    plan.setup.refine_metric = named_metric(cfg.search.refine_metric).value_or(cfg.search.metric);
    plan.setup.histogram = cfg.search.histogram;
    plan.setup.method = cfg.search.method;
    plan.min_confidence = l.min_confidence;
    // "auto": a job the CPU is estimated to finish sooner takes the CPU,
    // no GPU started (the sample job: cuda 0.21-0.23 s, cpu 0.18 s on 16 cores).
    const BackendRequest requested = opt.backend.value_or(cfg.device.backend);
    std::optional<BackendEstimate> estimate;
    if (requested == BackendRequest::automatic)
        estimate = estimate_landmark_backends(
            plan.points.size(), plan.setup.search.candidates(), plan.setup.search.window_pixels(),
            std::int64_t(plan.source.width) * plan.source.height * plan.source.depth, omp_get_max_threads(),
            gpu_start_seconds_here(opt.batch_jobs, cfg.device.gpu), l.min_confidence > 0,
            l.refine == FitRefinement::global);
    plan.device = {choose_by_estimate(requested, cfg.device.gpu, estimate), cfg.device.gpu};
    plan.backend_choice = estimate;
    plan.voxel_size = l.voxel_size;
    plan.units = l.voxel_size ? "voxel_size units (x, y, z scaled by [landmarks] voxel_size)" : "voxels";
    if (!l.voxel_size && (plan.source.spacing || plan.target.spacing)) {
        // The headers' voxel size (NRRD, NIfTI). The search compares voxel
        // to voxel, so both volumes must have the same one.
        const auto& s = plan.source.spacing ? plan.source.spacing : plan.target.spacing;
        const auto& t = plan.target.spacing ? plan.target.spacing : plan.source.spacing;
        for (int a = 0; a < 3; ++a)
            if (std::fabs((*s)[a] - (*t)[a]) > 1e-6 * std::max((*s)[a], (*t)[a]))
                throw InputError(l.target + ": voxel size " + format_spacing(*t) + " differs from the source's " +
                                 format_spacing(*s) + " (" + l.source + "); resample one volume onto the other's grid "
                                 "first, or set [landmarks] voxel_size to override both headers");
        if (*s != std::array<double, 3>{1, 1, 1}) {
            plan.voxel_size = *s;
            plan.units = "header units (x, y, z scaled by the volumes' voxel size " + format_spacing(*s) + ")";
        }
    }
    plan.setup.subpixel = l.subpixel;
    // Same-modality volumes (a brain before and after): intensities, each
    // binned by its own distribution (refine/refine.hpp).
    plan.setup.refine_on = RefineOn::intensity;
    plan.fit = cfg.output.fit;
    plan.refine = l.refine;
    if (plan.refine == FitRefinement::global && plan.fit == FitKind::none)
        throw ConfigError(cfg.where("landmarks.refine") +
                          ": refine = \"global\" refines the fit; set [output] fit = \"rigid\" or \"affine\"");
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
      << " candidates per point), subpixel " << name_of(plan.setup.subpixel) << "\n"
      << "fit:        " << name_of(plan.fit)
      << (plan.refine == FitRefinement::global ? ", refined globally (MI over the volumes' overlap)" : "") << "\n"
      << "backend:    "
      << (plan.backend_choice ? describe_choice(*plan.backend_choice, plan.device.backend == Backend::cpu)
                              : describe_backend(plan.device.backend, plan.device.gpu))
      << "\n"
      << "output:     " << plan.output_dir << "\n";
    return o.str();
}

}  // namespace stackalign
