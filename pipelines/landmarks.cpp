#include "landmarks.hpp"

#include <omp.h>

#include <map>
#include <sstream>

#include "../kernels/cuda_api.hpp"
#include "../src/core/error.hpp"
#include "stages/pair_confidence.hpp"
#include "stages/refine_fit.hpp"
#include "plan/backend_cost.hpp"
#include "stages/run_record.hpp"

namespace stackalign {

LandmarkResult run_landmarks(const LandmarkPlan& plan, const RunOptions& opt, const HeldLandmarks* held) {
    if (held && !plan.inputs_in_memory) throw InternalError("volumes held in memory need a plan made with them");
    JobBook job(plan.output_dir, opt);
    log_line(opt.verbosity, "matching " + std::to_string(plan.points.size()) + " landmarks of " + plan.source_path +
                                " (" + dims(plan.source) + ") in " + plan.target_path + " (" + dims(plan.target) + ")");
    LandmarkResult result;

    // load
    using Volume = std::shared_ptr<const RawFrame>;
    const auto [source_held, target_held] = job.timed(&StageTimes::read, [&] {
        return held ? std::pair<Volume, Volume>{held->source, held->target}
                    : std::pair<Volume, Volume>{std::make_shared<const RawFrame>(read_volume(plan.source_path)),
                                                std::make_shared<const RawFrame>(read_volume(plan.target_path))};
    });
    const RawFrame &source = *source_held, &target = *target_held;
    std::map<std::string, std::string> volume_problems;
    for (const auto& [name, volume] : {std::pair<std::string, const RawFrame*>{"source", &source}, {"target", &target}})
        if (const std::string problem = frame_problem(*volume); !problem.empty()) {
            volume_problems[name] = problem;
            log_line(opt.verbosity, "warning: " + name + " volume: " + problem + "; no point can be matched in it");
        }

    // preprocess: both volumes, once
    std::unique_ptr<PairSearcher> searcher = make_pair_searcher(plan.device, plan.setup);
    result.backend_description = searcher->describe();
    log_line(opt.verbosity, "backend: " + result.backend_description);
    job.timed(&StageTimes::preprocess, [&] {
        searcher->load(0, source);
        searcher->load(1, target);
        if (plan.min_confidence > 0) searcher->load(kNullSlot, turned_half_way(target), load_options(false, false));
    });

    // search + refine
    result.matches = job.timed(&StageTimes::search, [&] {
        return match_points(plan, *searcher, result.backend_description, opt.verbosity);
    });
    int searched = 0;
    for (const LandmarkMatch& m : result.matches) searched += m.matched();

    // fit + write
    // One voxel in the points' units (voxel_size, or voxels).
    const double voxel =
        plan.voxel_size ? ((*plan.voxel_size)[0] + (*plan.voxel_size)[1] + (*plan.voxel_size)[2]) / 3.0 : 1.0;
    result.fit = fit_points(plan.fit, result.matches, voxel);
    if (plan.refine == FitRefinement::global && result.fit.fit) {
        const GlobalRefinement g = job.timed(&StageTimes::refine, [&] {
            return refine_fit_globally(plan, source, target, *searcher, result.matches, *result.fit.fit);
        });
        log_line(opt.verbosity, name_of(plan.fit) + " fit " + result.fit.fit->note);
        result.refinement = g.result;
    }
    searcher.reset();  // its GPU memory, before writing
    job.timed(&StageTimes::write, [&] { write_matches(plan, result.matches, result.fit); });
    if (!result.fit.error.empty()) {
        int skipped = 0;
        for (const LandmarkMatch& m : result.matches) skipped += !m.matched();
        throw FitError(result.fit.error + " (" + std::to_string(result.matches.size()) + " points: " +
                       std::to_string(searched) + " matched, " + std::to_string(skipped) +
                       " skipped; why per point: " + plan.output_dir + "/matches.csv; no fit.txt or run.json written)");
    }

    nlohmann::ordered_json details = landmark_record(plan, result.matches, result.fit, result.refinement,
                                                     result.backend_description, searched, job.times.search);
    details["volume_warnings"] = volume_problems;
    job.write_record(plan.provenance, details);

    int outliers = 0;
    for (const LandmarkMatch& m : result.matches) outliers += m.status == "outlier";
    const std::string units = plan.voxel_size ? "voxel_size units" : "voxels";
    std::ostringstream summary;
    summary.precision(3);
    summary << ": " << searched << " of " << result.matches.size() << " points matched";
    if (result.fit.fit)
        summary << ", " << outliers << " outliers, " << name_of(plan.fit) << " fit rms " << result.fit.fit->rms << " " << units;
    job.log_done(summary.str(), {"read", "preprocess", "search", "write"});
    return result;
}

LandmarkResult run_landmarks(const Config& cfg, const RunOptions& opt, const HeldLandmarks* held) {
    if (opt.threads > 0) omp_set_num_threads(opt.threads);
    const LandmarkPlan plan = plan_landmarks(cfg, opt, held);
    const cuda::ContextsStarting contexts(plan.device.backend == Backend::cuda ? std::vector<int>{plan.device.gpu}
                                                                               : std::vector<int>{});
    return run_landmarks(plan, opt, held);
}

}  // namespace stackalign
