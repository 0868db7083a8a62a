#include "stack.hpp"

#include <omp.h>

#include <future>
#include <optional>

#include "../kernels/cuda_api.hpp"
#include "../src/core/interrupt.hpp"
#include "stages/accumulate.hpp"
#include "stages/apply.hpp"
#include "stages/axis_by_tracks.hpp"
#include "stages/axis_place.hpp"
#include "stages/centre_of_mass.hpp"
#include "stages/file_order.hpp"
#include "stages/flag_pairs.hpp"
#include "stages/judge_run.hpp"
#include "stages/level_specimen.hpp"
#include "stages/match_projections.hpp"
#include "stages/pair_confidence.hpp"
#include "stages/preprocess.hpp"
#include "stages/run_record.hpp"
#include "stages/slab_fit.hpp"
#include "stages/stretch_choice.hpp"
#include "stages/tilt_axis.hpp"
#include "stages/write_outputs.hpp"

namespace stackalign {

StackResult run_stack(const StackPlan& planned, const RunOptions& opt, const HeldStack* held) {
    const Verbosity v = opt.verbosity;
    JobBook job(planned.output.dir, opt);
    log_line(v, "aligning " + std::to_string(planned.frames) + " frames of " + std::to_string(planned.width) + "x" +
                    std::to_string(planned.height) + " " + to_string(planned.type) + " from " + planned.files[0] +
                    (planned.files.size() > 1 ? " ..." : ""));
    if (planned.backend_choice)
        log_line(v, "backend " + describe_choice(*planned.backend_choice, planned.device.backend == Backend::cpu));

    // load: frames are read as the stages need them and kept while they fit
    // in the cache, so a series larger than memory streams.
    const std::size_t cache = frame_cache_budget(opt.frame_cache_bytes);
    // A series stored out of tilt order is read in tilt order (view_order).
    FrameReader frames = job.timed(&StageTimes::read, [&] {
        return (held ? FrameReader(*held->input) : FrameReader(planned.files, cache)).in_order(planned.view_order);
    });

    if (planned.device.backend == Backend::cuda && !held) frames.lock_kept_pages(gpu_page_locking(planned.device.gpu));

    // tilt axis: the one given, or estimated from the views (counted as preprocessing)
    StackPlan plan = job.timed(&StageTimes::preprocess, [&] { return resolve_tilt_axis(planned, frames, v); });

    const std::future<void> slab_fit_ready = prepare_slab_fit(plan);

    // For each way of stretching ("auto": both, stretch_choice.hpp):
    // refinement smoothing, the one given or chosen from the frames' noise
    // and a trial on a few pairs, whose pairs the search takes as they are;
    // then preprocess + search + refine, pair by pair; flag; solve.
    std::optional<AlignedPairs> aligned;
    ChanceScores chance;
    for (const StackPlan& way : stretch_candidates(plan)) {
        // (a second way stops once it cannot win: losing_way_stop)
        AlignedPairs pairs = search_one_way(way, frames, aligned, job.times, v);
        if (!pairs.search.stopped) {
            weigh_pairs_against_chance(pairs.plan, frames, pairs.search, chance, job.times, v);
            flag_pairs(pairs.plan.flags, pairs.search, v);
            pairs.results = accumulate_frames(pairs.plan, pairs.search);
        }
        throw_if_interrupted();
        keep_more_consistent(aligned, std::move(pairs), v);
    }
    plan = aligned->plan;
    PairSearch& search = aligned->search;
    std::vector<FrameResult>& results = aligned->results;

    // tilt axis ("auto"): refined by patches tracked through the views at their offsets
    // (counted as preprocessing, as the first estimate is)
    const TrackedAxis tracked =
        job.timed(&StageTimes::preprocess, [&] { return refine_axis_by_tracks(plan, frames, search, results, v); });

    // centres of mass: a whole object's views placed by their first moments
    // ("auto" tilt axis: then turned until its slice masses agree)
    const CentreOfMassResult centred = centre_views_by_mass(plan, frames, search, results, v);
    if (centred.axis_refined()) {
        plan.tilt_axis = centred.axis;
        plan.tilt_axis_error = centred.axis_error;
        plan.tilt_axis_from_moments = true;
    }

    // axis place: a slab's views moved alike until its reconstruction is sharpest
    const AxisPlace placed = job.timed(&StageTimes::refine, [&] {
        return place_axis_by_sharpness(plan, frames, search, results, centred.applied, v);
    });

    // slab fit: a thick slab's smooth errors, by its views' consistency with one slab
    const SlabFit slab =
        job.timed(&StageTimes::refine, [&] { return fit_slab(plan, frames, search, results, tracked, centred.applied, v); });
    if (slab.ran && !slab.on_layers)
        take_angles_as_read(plan, results,
                            "the pairs' estimate is their best stretch on content that fills the slab's depth, not the "
                            "stage's tilt, and the slab fit ran in the angles read",
                            v);
    // tilt offset ("auto"): a slab of planes laid level by its tracked points,
    // else by its reconstruction; a whole object has none to find
    ReconstructedLevel reconstructed;
    if (centred.applied)
        take_angles_as_read(plan, results, "a whole object: an offset only turns it about the axis, which no projection tells", v);
    else if (!level_by_tracks(plan, results, tracked, slab, v))
        reconstructed = job.timed(&StageTimes::refine,
                                  [&] { return level_by_reconstruction(plan, frames, search, results, slab, v); });

    // projection matching: every view against a reprojection of the others
    std::optional<ProjectionMatchResult> matched;
    if (plan.projection.on) {
        const std::vector<FrameResult> before = results;
        matched = match_projections(plan, frames, search, results, job.times, v);
        judge_by_centres_of_mass(plan, frames, search, centred, before, results, *matched, v);
    }
    if (matched && matched->kept && matched->axis_refined && !matched->axis_per_round.empty()) {  // the outputs report the refined axis
        plan.tilt_axis_first = plan.tilt_axis;
        plan.tilt_axis = matched->tilt_axis;
    }

    // verdict: whether to believe the run (run.json's quality, the report's
    // first line, the log's last)
    const RunQuality quality = judge_run(plan, search, matched ? &*matched : nullptr);

    // apply + write. The report's content (a few views moved, thumbnails,
    // PNG) needs neither the aligned stack nor the tables, so it is made on
    // a thread of its own meanwhile (it was most of the write stage after
    // the stack: 0.06 s of a 121-view tilt series on 2 cores); its file is
    // written after the stack's, so a run that fails leaves no report.
    std::future<std::string> report;
    if (plan.output.report)
        report = std::async(std::launch::async,
                            [&] { return make_report(plan, search, results, frames, matched ? &*matched : nullptr, quality); });
    // The stack and the tables in the file's order (file_order.hpp); the
    // report and run.json in tilt order.
    InFileOrder file = in_file_order(plan, results, frames);
    std::vector<std::string> written;
    const AlignedFrameSink to_caller = held ? held->aligned : AlignedFrameSink{};
    if (plan.output.aligned)
        written.push_back(write_aligned_stack(file.plan, file.frames, file.results, job.times, to_caller));
    else if (to_caller) move_aligned_frames(file.plan, file.frames, file.results, job.times, to_caller);
    job.timed(&StageTimes::write, [&] {
        for (const std::string& name : write_frame_tables(file.plan, file.results)) written.push_back(name);
        if (report.valid()) written.push_back(write_report(plan, report.get()));
    });

    nlohmann::ordered_json details;
    details["quality"] = quality_record(quality);
    details.update(stack_record(plan, search, written, job.times));
    if (tracked.ran || !tracked.why.empty()) details["tilt_axis_tracks"] = tracked_axis_record(tracked);
    if (placed.ran || !placed.why.empty()) details["axis_place"] = axis_place_record(placed);
    details["slab_fit"] = slab_fit_record(slab);
    details["centre_of_mass"] = centre_of_mass_record(centred);
    if (reconstructed.ran || !reconstructed.why_not_run.empty()) details["tilt_offset_reconstruction"] = reconstructed_level_record(reconstructed);
    if (matched) details["projection_matching"] = projection_record(*matched);
    details["frame_cache_mb"] = double(cache) / (1 << 20);
    job.write_record(plan.provenance, details);
    std::vector<std::string> stages = {"read", "preprocess", "search", "refine", "apply", "write"};
    if (plan.projection.on) stages.insert(stages.begin() + 4, "projection matching");
    job.log_done("", stages, "; " + quality_line(quality));
    return {file.results, search.pairs, search.backend_description, quality};
}

StackResult run_stack(const Config& cfg, const RunOptions& opt, const HeldStack* held) {
    if (opt.threads > 0) omp_set_num_threads(opt.threads);
    const StackPlan plan = plan_stack(cfg, opt, held ? &held->input->info : nullptr);
    const cuda::ContextsStarting contexts(plan.device.backend == Backend::cuda ? searcher_gpus(plan) : std::vector<int>{});
    return run_stack(plan, opt, held);
}

}  // namespace stackalign
