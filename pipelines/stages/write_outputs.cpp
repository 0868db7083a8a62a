#include "write_outputs.hpp"

#include <omp.h>

#include <filesystem>
#include <sstream>

#include "../../kernels/cuda_api.hpp"
#include "../../src/alignment/apply.hpp"
#include "../../src/output/atomic_write.hpp"
#include "../../src/output/report_html.hpp"
#include "../plan/output_names.hpp"
#include "flag_pairs.hpp"
#include "search_motion.hpp"

namespace fs = std::filesystem;

namespace stackalign {

std::vector<std::string> write_frame_tables(const StackPlan& plan, const std::vector<FrameResult>& results) {
    const fs::path dir(plan.output.dir);
    std::vector<std::pair<std::string, std::string>> tables = {
        {output_names::shifts, shifts_csv(results, !plan.motion.translation_only(), plan.projection.on)},
        {output_names::transforms, imod_xf(results)},
        {output_names::prexf(plan.name), imod_prexf(results)},
        {output_names::prexg(plan.name), imod_xf(results)},
    };
    if (!plan.angles.empty()) tables.push_back({output_names::tlt(plan.name), imod_tlt(results)});
    std::vector<std::string> written;
    for (const auto& [name, text] : tables) {
        write_text_atomically((dir / name).string(), text);
        written.push_back(name);
    }
    return written;
}

namespace {

ReportInput report_input(const StackPlan& plan, const PairSearch& search, const std::vector<FrameResult>& results,
                         FrameReader& frames) {
    ReportInput r;
    r.title = fs::path(plan.files[0]).filename().string() + (plan.files.size() > 1 ? " ..." : "");
    std::ostringstream size;
    size << plan.frames << " views, " << plan.width << "x" << plan.height << " " << to_string(plan.type) << " ("
         << plan.input.format << ")";
    r.summary.push_back({"input", size.str()});
    if (!plan.angles.empty()) {
        std::ostringstream t;
        t.precision(4);
        t << plan.angles.front() << " to " << plan.angles.back() << " degrees; axis " << plan.tilt_axis
          << " degrees from y";
        if (plan.tilt_axis_first)
            t << " (refined by "
              << (plan.tilt_axis_from_moments  ? "patch tracks and the slice masses"
                  : plan.tilt_axis_from_tracks ? "patch tracks"
                                               : "projection matching")
              << " from "
              << *plan.tilt_axis_first << ", found from the views: +- " << plan.tilt_axis_error << " standard error)";
        else if (plan.tilt_axis_auto)
            t << " (found from the views: +- " << plan.tilt_axis_error << " standard error)";
        if (plan.tilt_offset != 0 || plan.tilt_offset_auto || plan.tilt_offset_levelled())
            t << "; tilt offset " << plan.tilt_offset << " degrees added"
              << (plan.tilt_offset_levelled_by == StackPlan::LevelledBy::tracks ? " (laying the tracked points level: +- "
                  : plan.tilt_offset_levelled() ? " (laying the reconstruction's content level: +- "
                  : plan.tilt_offset_auto       ? " (found from the views: +- "
                                                : "")
              << (plan.tilt_offset_auto || plan.tilt_offset_levelled()
                      ? std::to_string(plan.tilt_offset_error) + " standard error)"
                      : "");
        if (plan.pairs_tilt_offset) t << "; the pairs stretched as at " << plan.pairs_tilt_offset << " degrees";
        if (!plan.angles_as_read_why.empty()) t << "; the angles read kept: " << plan.angles_as_read_why;
        t << "; cosine stretch " << plan.stretch_mode();
        if (plan.stretch_ruled_out) t << " (" << plan.stretch_why << ")";
        r.summary.push_back({"tilt", t.str()});
    }
    r.summary.push_back({"reference", "view " + std::to_string(plan.reference) + " (" + plan.reference_why + ")"});
    if (plan.kept.size() < std::size_t(plan.frames))
        r.summary.push_back({"excluded", std::to_string(plan.frames - int(plan.kept.size())) +
                                             " views (bridged; offsets interpolated)"});
    const MiSearchParams& s = plan.setup.search;
    r.summary.push_back({"search", "window " + std::to_string(s.window.width) + "x" + std::to_string(s.window.height) +
                                       ", shifts +-" + std::to_string(s.max_shift.x) + ", " +
                                       std::to_string(plan.setup.preprocess.bins) + " bins"});
    if (!plan.motion.translation_only()) {
        std::ostringstream m;
        m << name_of(plan.motion.model) << ": angles +-" << plan.motion.angle_range << " degrees searched at "
          << plan.motion.angle_step << ", then refined with the shift";
        r.summary.push_back({"motion", m.str()});
    }
    r.summary.push_back({"backend", search.backend_description});
    for (const auto& [view, problem] : search.frame_problems)
        r.summary.push_back({"warning", "view " + std::to_string(view) + ": " + problem});
    r.frames = results;
    r.rotation = !plan.motion.translation_only();
    r.projection = plan.projection.on;
    for (const PairResult& p : search.pairs)
        r.pairs.push_back({p.ref, p.mov, p.peak.sharpness(), p.weak || p.outlier, pair_status(p)});
    r.min_sharpness = plan.flags.min_sharpness;
    r.reference = plan.reference;
    r.montage_views = montage_views(plan.kept, plan.reference);
    for (int v : r.montage_views) {
        const auto frame = frames.read(v);
        r.before.push_back(frame);
        r.after.push_back(apply_transform(*frame, results[v].offset, frame->mean()));
    }
    return r;
}

}  // namespace

std::string make_report(const StackPlan& plan, const PairSearch& search, const std::vector<FrameResult>& results,
                        FrameReader& frames, const ProjectionMatchResult* matched, const RunQuality& quality) {
    ReportInput in = report_input(plan, search, results, frames);
    in.verdict = name_of(quality.verdict);
    in.verdict_reasons = quality.reasons;
    if (matched) in.rounds_largest = matched->max_move, in.rounds_rms = matched->rms_move;
    return stack_report_html(in);
}

std::string write_report(const StackPlan& plan, const std::string& html) {
    write_text_atomically((fs::path(plan.output.dir) / output_names::report).string(), html);
    return output_names::report;
}

nlohmann::ordered_json stack_record(const StackPlan& plan, const PairSearch& search,
                                    const std::vector<std::string>& written, const StageTimes& times) {
    const MiSearchParams& s = plan.setup.search;
    nlohmann::ordered_json j;
    j["plan"] = {{"subpixel", name_of(plan.setup.subpixel)},
                 {"refine_on", name_of(plan.setup.refine_on)},
                 {"refine_sigma", plan.setup.refine_sigma},
                 {"refine_sigma_from", plan.refine_sigma_why},
                 {"refine_side", plan.setup.refine_side > 0 ? nlohmann::ordered_json(plan.setup.refine_side)
                                                            : nlohmann::ordered_json("the whole window")},
                 {"offsets", name_of(plan.solve)},
                 {"transform", name_of(plan.motion.model)},
                 {"window", {s.window.width, s.window.height}},
                 {"window_origin", {s.window.x, s.window.y}},
                 {"coarse_to_fine", plan.coarse_bin() > 1},
                 {"coarse_block", plan.coarse_bin()},
                 {"reference", plan.reference},
                 {"reference_chosen_by", plan.reference_why},
                 {"cosine_stretch", plan.stretch_mode()},
                 {"cosine_stretch_chosen_by", plan.stretch_why},
                 {"projection_matching_chosen_by", plan.projection_why},
                 {"tilt_axis", plan.tilt_axis},
                 {"tilt_axis_from", plan.tilt_axis_from_moments ? "auto, refined by patch tracks and the slice masses"
                                    : plan.tilt_axis_from_tracks ? "auto, refined by patch tracks"
                                    : plan.tilt_axis_first ? "auto, refined by projection matching"
                                    : plan.tilt_axis_auto ? "auto"
                                    : plan.tilt_axis_asked ? "config"
                                    : plan.mdoc_tilt_axis ? ".mdoc header (auto: the views did not show the axis)"
                                    : plan.angles.empty() ? "none (not a tilt series)"
                                    : "none (auto: the views did not show the axis)"},
                 {"format", plan.output.format},
                 {"backend", to_string(plan.device.backend)},
                 {"gpu", plan.device.gpu},
                 {"searchers", plan.searchers}};
    if (plan.backend_choice) j["plan"]["backend_choice"] = choice_record(*plan.backend_choice);
    if (plan.device.backend == Backend::cuda) j["plan"]["cuda_device_max_connections"] = cuda::work_queues();
    if (plan.refine_sigma_auto) j["plan"]["refine_noise_to_contrast"] = plan.refine_noise;
    if (plan.refine_trial)
        j["plan"]["refine_sigma_trial"] = {{"views", plan.refine_trial->views},
                                           {"sigmas", {plan.refine_trial->less, plan.refine_trial->more}},
                                           {"triplet_disagreement_rms",
                                            {plan.refine_trial->closure_less, plan.refine_trial->closure_more}},
                                           {"seconds", {plan.refine_trial->seconds_less, plan.refine_trial->seconds_more}},
                                           {"larger_smoothing_stopped", plan.refine_trial->more_stopped},
                                           {"larger_smoothing_triplets", plan.refine_trial->triplets_more}};
    if (!plan.angles.empty()) j["plan"]["angles_from"] = plan.angles_from;
    if (!plan.view_order.empty()) j["plan"]["view_order"] = plan.view_order;  // the file's frame of each view, tilt order
    if (plan.mdoc_tilt_axis) j["plan"]["mdoc_tilt_axis"] = *plan.mdoc_tilt_axis;
    if (!plan.angles.empty()) {
        j["plan"]["tilt_offset"] = plan.tilt_offset;
        j["plan"]["tilt_offset_from"] =
            plan.tilt_offset_levelled_by == StackPlan::LevelledBy::tracks
                ? (plan.tilt_offset != 0 ? "tracks (auto: the offset that lays the tracked points level)"
                                         : "none (auto: the tracked points lie level within 2 standard errors)")
            : plan.tilt_offset_levelled()
                ? (plan.tilt_offset != 0 ? "reconstruction (auto: the offset that lays its content level)"
                                         : "none (auto: the reconstruction's content lies level within 2 standard errors)")
            : plan.tilt_offset_auto      ? "auto"
            : !plan.angles_as_read_why.empty() ? "none (auto: " + plan.angles_as_read_why + ")"
            : plan.tilt_offset_asked     ? "config"
                                         : "none (auto: no slab, no clear peak, or within 2 standard errors of 0)";
        if (plan.tilt_offset_auto || plan.pairs_tilt_offset || plan.tilt_offset_levelled())
            j["plan"]["tilt_offset_standard_error"] = plan.tilt_offset_error;
        if (plan.pairs_tilt_offset) j["plan"]["pairs_tilt_offset"] = plan.pairs_tilt_offset;
    }
    if (plan.tilt_axis_auto) {
        j["plan"]["tilt_axis_standard_error"] = plan.tilt_axis_error;
        j["plan"]["tilt_axis_views_compared"] = plan.tilt_axis_views;
        if (plan.tilt_axis_first) j["plan"]["tilt_axis_first_estimate"] = *plan.tilt_axis_first;
    }
    j["input"] = {{"files", plan.files},
                  {"format", plan.input.format},
                  {"frames", plan.frames},
                  {"width", plan.width},
                  {"height", plan.height},
                  {"pixel_type", to_string(plan.type)},
                  {"pixel_size_angstrom", plan.input.pixel_size}};
    if (plan.input_in_memory) j["input"]["in_memory"] = true;  // `files` names it; no such file was read
    if (!plan.angles.empty()) j["input"]["tilt_angles"] = plan.angles;
    j["frame_warnings"] = nlohmann::json::array();
    for (const auto& [view, problem] : search.frame_problems)
        j["frame_warnings"].push_back({{"frame", view}, {"problem", problem}});
    j["outputs"] = written;
    j["backend"] = search.backend_description;
    // refine_metric = "auto": each pair's r and the metric it chose.
    auto add_refined_with = [&](auto& pair, const PairResult& p) {
        if (!p.linear_r) return;
        pair["linear_r"] = *p.linear_r;
        pair["refined_with"] = auto_refined_with(plan.setup, *p.linear_r);
    };
    j["pairs"] = nlohmann::json::array();
    for (const PairResult& p : search.pairs) {
        j["pairs"].push_back({{"ref", p.ref},
                              {"mov", p.mov},
                              {"dx", p.peak.dx},
                              {"dy", p.peak.dy},
                              {"subpixel_dx", p.measured.dx},
                              {"subpixel_dy", p.measured.dy},
                              {"stretch", p.stretch},
                              {"shift_dx", p.shift.dx},
                              {"shift_dy", p.shift.dy},
                              {"angle", angle_of(p.shift)},
                              {"scale", scale_of(p.shift)},
                              {"mi", p.peak.mi},
                              {"sharpness", p.peak.sharpness()},
                              {"null_mi", p.null_mi},
                              {"confidence", p.confidence},
                              {"robust_z", p.z},
                              {"residual", p.residual},
                              {"status", pair_status(p)}});
        add_refined_with(j["pairs"].back(), p);
    }
    j["skip_pairs"] = nlohmann::json::array();
    for (const PairResult& p : search.skips) {
        j["skip_pairs"].push_back({{"ref", p.ref}, {"mov", p.mov}, {"shift_dx", p.shift.dx}, {"shift_dy", p.shift.dy},
                                   {"angle", angle_of(p.shift)}, {"scale", scale_of(p.shift)}, {"mi", p.peak.mi},
                                   {"null_mi", p.null_mi}, {"confidence", p.confidence},
                                   {"sharpness", p.peak.sharpness()}, {"residual", p.residual}});
        add_refined_with(j["skip_pairs"].back(), p);
    }
    j["views_preprocessed"] = search.views_preprocessed;
    j["searchers"] = nlohmann::json::array();
    for (const SearcherTimes& t : search.searchers)
        j["searchers"].push_back({{"pairs", t.pairs},
                                  {"loads", t.loads},
                                  {"skips_only", t.skips_only},
                                  {"seconds",
                                   {{"reading", t.reading},
                                    {"loading", t.loading},
                                    {"search", t.search},
                                    {"refine", t.refine},
                                    {"waiting", t.waiting},
                                    {"wall", t.wall}}}});
    j["pair_updates_per_second"] =
        times.search > 0 ? double(s.window_pixels()) * s.candidates() * double(search.pairs.size()) / times.search : 0;
    return j;
}

}  // namespace stackalign
