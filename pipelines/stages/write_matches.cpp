#include "write_matches.hpp"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "../../kernels/cuda_api.hpp"
#include "../../src/output/atomic_write.hpp"
#include "../../src/output/transform_files.hpp"
#include "../plan/output_names.hpp"

namespace fs = std::filesystem;

namespace stackalign {

std::string matches_csv(const std::vector<LandmarkMatch>& matches, const std::optional<FitResult>& fit) {
    std::ostringstream o;
    o << "name,src_x,src_y,src_z,dst_x,dst_y,dst_z,dx,dy,dz,mi,sharpness,confidence,status" << (fit ? ",fit_x,fit_y,fit_z,residual" : "")
      << "\n";
    for (const LandmarkMatch& m : matches) {
        o << csv_field(m.name);
        for (double v : m.src) o << "," << format_number(v);
        if (m.matched()) {
            for (double v : m.dst) o << "," << format_number(v);
            for (int k = 0; k < 3; ++k) o << "," << format_number(m.dst[k] - m.src[k]);
            o << "," << format_number(m.mi) << "," << format_number(m.sharpness) << ","
              << (std::isnan(m.confidence) ? std::string() : format_number(m.confidence));
        } else {
            o << ",,,,,,,,,";
        }
        o << "," << csv_field(m.status);
        if (fit) {
            const Point3 f = fit->apply(m.src);
            for (double v : f) o << "," << format_number(v);
            o << ",";
            if (m.matched()) o << format_number(std::hypot(m.dst[0] - f[0], m.dst[1] - f[1], m.dst[2] - f[2]));
        }
        o << "\n";
    }
    return o.str();
}

void write_matches(const LandmarkPlan& plan, const std::vector<LandmarkMatch>& matches, const PointFit& fit) {
    const fs::path dir(plan.output_dir);
    std::vector<Point3> inlier_src, inlier_dst, all_src, all_dst;
    std::vector<std::string> matched_names;
    std::vector<bool> active;
    for (const LandmarkMatch& m : matches) {
        if (!m.matched()) continue;
        matched_names.push_back(m.name);
        all_src.push_back(m.src);
        all_dst.push_back(m.dst);
        active.push_back(m.status == "ok");
        if (m.status == "ok") {
            inlier_src.push_back(m.src);
            inlier_dst.push_back(m.dst);
        }
    }
    write_text_atomically((dir / output_names::matches).string(), matches_csv(matches, fit.fit));
    write_text_atomically((dir / output_names::matches_amira).string(), amira_landmarks(inlier_src, inlier_dst));
    write_text_atomically((dir / output_names::matches_bigwarp).string(),
                          bigwarp_csv(matched_names, active, all_src, all_dst));
    const std::string units = plan.voxel_size ? "voxel_size units" : "voxels";
    if (fit.fit) {
        write_text_atomically((dir / output_names::fit).string(), fit_report(*fit.fit, matched_names, units));
        write_text_atomically((dir / output_names::fit_itk).string(), itk_transform_text(*fit.fit));
        write_text_atomically((dir / output_names::fit_elastix).string(),
                              elastix_transform_text(*fit.fit, {plan.target.width, plan.target.height, plan.target.depth},
                                                     plan.voxel_size.value_or(std::array<double, 3>{1, 1, 1})));
    }
}

nlohmann::ordered_json landmark_record(const LandmarkPlan& plan, const std::vector<LandmarkMatch>& matches,
                                       const PointFit& fit, const std::optional<GlobalRefineResult>& refinement,
                                       const std::string& backend, int searched,
                                       double search_seconds) {
    int ok = 0, outliers = 0;
    for (const LandmarkMatch& m : matches) ok += m.status == "ok", outliers += m.status == "outlier";
    nlohmann::ordered_json j;
    j["plan"] = {{"backend", to_string(plan.device.backend)}, {"gpu", plan.device.gpu}};
    if (plan.device.backend == Backend::cuda) j["plan"]["cuda_device_max_connections"] = cuda::work_queues();
    if (plan.backend_choice) j["plan"]["backend_choice"] = choice_record(*plan.backend_choice);
    j["input"] = {{"source", {{"width", plan.source.width}, {"height", plan.source.height}, {"depth", plan.source.depth},
                              {"pixel_type", to_string(plan.source.type)}}},
                  {"target", {{"width", plan.target.width}, {"height", plan.target.height}, {"depth", plan.target.depth},
                              {"pixel_type", to_string(plan.target.type)}}},
                  {"points_format", to_string(plan.format)},
                  {"points", int(matches.size())}};
    if (plan.inputs_in_memory) j["input"]["in_memory"] = true;  // the names in the config name them; no file was read
    nlohmann::ordered_json moved = nlohmann::ordered_json::object();
    for (const LandmarkMatch& m : matches)
        if (m.matched() && m.window_moved != std::array<int, 3>{}) moved[m.name] = m.window_moved;
    j["points"] = {{"matched", ok + outliers}, {"outliers", outliers}, {"skipped", int(matches.size()) - ok - outliers},
                   {"windows_moved_inward", moved}};
    if (fit.fit) j["fit"] = {{"kind", name_of(fit.fit->kind)}, {"matrix", fit.fit->m}, {"rms", fit.fit->rms},
                             {"sigma", fit.fit->sigma}, {"outliers", outliers}};
    if (refinement)
        j["fit"]["global_refinement"] = {{"mi_start", refinement->mi_start},
                                         {"mi_end", refinement->mi_end},
                                         {"batches", refinement->batches},
                                         {"transforms_scored", refinement->evaluations}};
    j["backend"] = backend;
    j["voxel_updates_per_second"] =
        search_seconds > 0 ? double(plan.setup.search.window_pixels()) * plan.setup.search.candidates() * searched / search_seconds : 0;
    return j;
}

}  // namespace stackalign
