// Write stage of a stack job: shifts.csv, the IMOD transform files, the
// report and run.json, each under a temporary name until complete.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/output/frame_tables.hpp"
#include "judge_run.hpp"
#include "match_projections.hpp"
#include "search_pairs.hpp"

namespace stackalign {

// shifts.csv, transforms.xf, <name>.prexf, <name>.prexg; returns their names.
std::vector<std::string> write_frame_tables(const StackPlan& plan, const std::vector<FrameResult>& results);

// report.html's text: plots, flagged pairs, before/after thumbnails of a
// few views (the slow part: views moved and encoded as PNG); and the file
// written, its name returned.
// `matched`: projection matching's rounds, plotted where given; `quality`:
// the run's verdict, shown first.
std::string make_report(const StackPlan& plan, const PairSearch& search, const std::vector<FrameResult>& results,
                        FrameReader& frames, const ProjectionMatchResult* matched, const RunQuality& quality);
std::string write_report(const StackPlan& plan, const std::string& html);

// The stack job's run.json content beyond the common record: the plan's
// decisions, the input, the outputs and every pair.
nlohmann::ordered_json stack_record(const StackPlan& plan, const PairSearch& search,
                                    const std::vector<std::string>& written, const StageTimes& times);

}  // namespace stackalign
