#include "landmarks.hpp"

#include <omp.h>

#include <map>
#include <sstream>

#include "../kernels/cuda_api.hpp"
#include "../src/core/error.hpp"
#include "stages/refine_fit.hpp"
#include "plan/backend_cost.hpp"
#include "stages/run_record.hpp"

namespace stackalign {

LandmarkResult run_landmarks(const LandmarkPlan& plan, const RunOptions& opt, const HeldLandmarks* held) {
    if (held && !plan.inputs_in_memory) throw InternalError("volumes held in memory need a plan made with them");
    const auto start = Clock::now();
    const PeakMemory peak(opt.own_peak_memory);
    job_started();
    const std::string run_json = start_output_dir(plan.output_dir);
    log_line(opt.verbosity, "matching " + std::to_string(plan.points.size()) + " landmarks of " + plan.source_path +
                                " (" + dims(plan.source) + ") in " + plan.target_path + " (" + dims(plan.target) + ")");
    StageTimes times;
    LandmarkResult result;

    // load
    auto t = Clock::now();
    const std::shared_ptr<const RawFrame> source_held =
        held ? held->source : std::make_shared<const RawFrame>(read_volume(plan.source_path));
    const std::shared_ptr<const RawFrame> target_held =
        held ? held->target : std::make_shared<const RawFrame>(read_volume(plan.target_path));
    const RawFrame &source = *source_held, &target = *target_held;
    times.read = seconds_since(t);
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
    t = Clock::now();
    searcher->load(0, source);
    searcher->load(1, target);
    times.preprocess = seconds_since(t);

    // search + refine
    t = Clock::now();
    result.matches = match_points(plan, *searcher, result.backend_description, opt.verbosity);
    times.search = seconds_since(t);
    int searched = 0;
    for (const LandmarkMatch& m : result.matches) searched += m.matched();

    // fit + write
    result.fit = fit_points(plan.fit, result.matches);
    if (plan.refine == FitRefinement::global && result.fit.fit) {
        t = Clock::now();
        const GlobalRefinement g = refine_fit_globally(plan, source, target, *searcher, result.matches, *result.fit.fit);
        times.refine = seconds_since(t);
        log_line(opt.verbosity, name_of(plan.fit) + " fit " + result.fit.fit->note);
        result.refinement = g.result;
    }
    searcher.reset();  // its GPU memory, before writing
    t = Clock::now();
    write_matches(plan, result.matches, result.fit);
    times.write = seconds_since(t);
    if (!result.fit.error.empty()) {
        int skipped = 0;
        for (const LandmarkMatch& m : result.matches) skipped += !m.matched();
        throw FitError(result.fit.error + " (" + std::to_string(result.matches.size()) + " points: " +
                       std::to_string(searched) + " matched, " + std::to_string(skipped) +
                       " skipped; why per point: " + plan.output_dir + "/matches.csv; no fit.txt or run.json written)");
    }

    nlohmann::ordered_json record = run_record(plan.provenance);
    record.update(landmark_record(plan, result.matches, result.fit, result.refinement, result.backend_description,
                                  searched, times.search));
    record["volume_warnings"] = volume_problems;
    finish_run_record(run_json, record, times, seconds_since(start), peak);

    int outliers = 0;
    for (const LandmarkMatch& m : result.matches) outliers += m.status == "outlier";
    const std::string units = plan.voxel_size ? "voxel_size units" : "voxels";
    std::ostringstream done;
    done.precision(3);
    done << "done in " << seconds_since(start) << " s: " << searched << " of " << result.matches.size()
         << " points matched";
    if (result.fit.fit) done << ", " << outliers << " outliers, " << name_of(plan.fit) << " fit rms " << result.fit.fit->rms << " " << units;
    done << " (read " << times.read << ", preprocess " << times.preprocess << ", search " << times.search << ", write "
         << times.write << "); outputs in " << plan.output_dir;
    log_line(opt.verbosity, done.str());
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
