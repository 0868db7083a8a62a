#include "stack.hpp"

#include <omp.h>

#include <future>
#include <optional>
#include <sstream>

#include "../kernels/cuda_api.hpp"
#include "../src/core/interrupt.hpp"
#include "stages/accumulate.hpp"
#include "stages/apply.hpp"
#include "stages/flag_pairs.hpp"
#include "stages/match_projections.hpp"
#include "stages/refine_smoothing.hpp"
#include "stages/run_record.hpp"
#include "stages/tilt_axis.hpp"
#include "stages/write_outputs.hpp"

namespace stackalign {

StackResult run_stack(const StackPlan& planned, const RunOptions& opt, const HeldStack* held) {
    const auto start = Clock::now();
    const PeakMemory peak(opt.own_peak_memory);
    job_started();
    const std::string run_json = start_output_dir(planned.output.dir);
    log_line(opt.verbosity, "aligning " + std::to_string(planned.frames) + " frames of " + std::to_string(planned.width) +
                                "x" + std::to_string(planned.height) + " " + to_string(planned.type) + " from " +
                                planned.files[0] + (planned.files.size() > 1 ? " ..." : ""));
    StageTimes times;
    if (planned.backend_choice)
        log_line(opt.verbosity, "backend " + describe_choice(*planned.backend_choice, planned.device.backend == Backend::cpu));

    // load: frames are read as the stages need them and kept while they fit
    // in the cache, so a series larger than memory streams.
    auto t = Clock::now();
    const std::size_t cache = frame_cache_budget(opt.frame_cache_bytes);
    FrameReader frames = held ? FrameReader(*held->input) : FrameReader(planned.files, cache);
    times.read = seconds_since(t);

    // tilt axis: the one given, or estimated from the views (counted as preprocessing)
    t = Clock::now();
    StackPlan plan = resolve_tilt_axis(planned, frames, opt.verbosity);
    times.preprocess += seconds_since(t);

    // refinement smoothing: the one given, or chosen from the frames' noise
    // (counted as preprocessing) and a trial on a few pairs (their searches
    // counted as searching and refining)
    SmoothingDecision smoothing = resolve_refine_smoothing(plan, frames, times, opt.verbosity);
    plan = smoothing.plan;

    // preprocess + search + refine, pair by pair (the trial's pairs taken as they are)
    PairSearch search = search_pairs(plan, frames, times, opt.verbosity, {&smoothing.trial, true});
    flag_pairs(plan.flags, search, opt.verbosity);
    std::vector<FrameResult> results = accumulate_frames(plan, search);
    throw_if_interrupted();

    // projection matching: every view against a reprojection of the others
    std::optional<ProjectionMatchResult> matched;
    if (plan.projection.on) matched = match_projections(plan, frames, search, results, times, opt.verbosity);
    if (matched && !matched->axis_per_round.empty()) {  // the outputs report the refined axis
        plan.tilt_axis_first = plan.tilt_axis;
        plan.tilt_axis = matched->tilt_axis;
    }

    // apply + write. The report's content (a few views moved, thumbnails,
    // PNG) needs neither the aligned stack nor the tables, so it is made on
    // a thread of its own meanwhile (it was most of the write stage after
    // the stack: 0.06 s of a 121-view tilt series on 2 cores); its file is
    // written after the stack's, so a run that fails leaves no report.
    std::future<std::string> report;
    if (plan.output.report)
        report = std::async(std::launch::async, [&] { return make_report(plan, search, results, frames); });
    std::vector<std::string> written;
    const AlignedFrameSink to_caller = held ? held->aligned : AlignedFrameSink{};
    if (plan.output.aligned) written.push_back(write_aligned_stack(plan, frames, results, times, to_caller));
    else if (to_caller) move_aligned_frames(plan, frames, results, times, to_caller);
    t = Clock::now();
    for (const std::string& name : write_frame_tables(plan, results)) written.push_back(name);
    if (report.valid()) written.push_back(write_report(plan, report.get()));
    times.write += seconds_since(t);

    nlohmann::ordered_json record = run_record(plan.provenance);
    record.update(stack_record(plan, search, written, times));
    if (matched) record["projection_matching"] = projection_record(*matched);
    record["frame_cache_mb"] = double(cache) / (1 << 20);
    finish_run_record(run_json, record, times, seconds_since(start), peak);

    std::ostringstream done;
    done.precision(3);
    done << "done in " << seconds_since(start) << " s (read " << times.read << ", preprocess " << times.preprocess
         << ", search " << times.search << ", refine " << times.refine
         << (plan.projection.on ? ", projection matching " : "");
    if (plan.projection.on) done << times.project;
    done << ", apply " << times.apply << ", write " << times.write << "); outputs in "
         << plan.output.dir;
    log_line(opt.verbosity, done.str());
    return {results, search.pairs, search.backend_description};
}

StackResult run_stack(const Config& cfg, const RunOptions& opt, const HeldStack* held) {
    if (opt.threads > 0) omp_set_num_threads(opt.threads);
    const StackPlan plan = plan_stack(cfg, opt, held ? &held->input->info : nullptr);
    const cuda::ContextsStarting contexts(plan.device.backend == Backend::cuda ? searcher_gpus(plan) : std::vector<int>{});
    return run_stack(plan, opt, held);
}

}  // namespace stackalign
