// A verdict per run: whether the offsets can be believed, with the reasons,
// so that a batch of hundreds of series can be sorted without reading each
// report. A verdict is not an error: the job's exit code does not change
// unless [output] fail_on asks it to.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../plan/stack_plan.hpp"
#include "match_projections.hpp"
#include "search_pairs.hpp"

namespace stackalign {

enum class Verdict { ok, suspect, failed };
const char* name_of(Verdict v);

struct RunQuality {
    Verdict verdict = Verdict::ok;
    std::vector<std::string> reasons;  // empty when ok
    int pairs = 0, pairs_not_ok = 0;
    double share_not_ok = 0;
    // Least squares: RMS of the skip pairs' disagreement with their two
    // neighbours (those whose peak says something), pixels; NaN without.
    double triplet_rms = std::nan("");
    int frames_unusable = 0;
    // Tilt series: projection matching's last round (RMS and largest move)
    // and the axis estimate's standard error (tilt_axis = "auto").
    std::optional<double> projection_rms, projection_max;
    std::optional<double> axis_standard_error;
};

// The rules (docs/outputs.md#quality): "failed" where half the pairs or
// more are not ok; "suspect" where more than one pair (and more than 5 %)
// is not ok, the triplets disagree by more than unreliable_px RMS, a frame
// cannot be aligned, projection matching (where kept) did not converge or
// its last round moved a view by more than 1 px, or the axis estimate's standard error exceeds 0.5 degrees; else "ok".
RunQuality judge_run(const StackPlan& plan, const PairSearch& search, const ProjectionMatchResult* matched);

nlohmann::ordered_json quality_record(const RunQuality& q);
// "quality ok" / "quality suspect: reason; reason".
std::string quality_line(const RunQuality& q);

}  // namespace stackalign
