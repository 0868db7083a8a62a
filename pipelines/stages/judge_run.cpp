#include "judge_run.hpp"

#include <cmath>
#include <cstdio>

#include "flag_pairs.hpp"

namespace stackalign {

namespace {
// More than one pair and more than this share of them flagged: suspect.
constexpr double kSuspectShare = 0.05;
constexpr double kFailedShare = 0.5;
constexpr double kAxisErrorDeg = 0.5;
// Projection matching's last round moving some view this far (pixels of the
// frame): the view disagrees with the reconstruction of the others.
constexpr double kProjectionMovePx = 1.0;

std::string format(const char* f, double a, double b = 0, double c = 0) {
    char s[200];
    std::snprintf(s, sizeof s, f, a, b, c);
    return s;
}
}  // namespace

const char* name_of(Verdict v) {
    switch (v) {
        case Verdict::ok: return "ok";
        case Verdict::suspect: return "suspect";
        case Verdict::failed: return "failed";
    }
    return "?";
}

RunQuality judge_run(const StackPlan& plan, const PairSearch& search, const ProjectionMatchResult* matched) {
    RunQuality q;
    q.pairs = int(search.pairs.size());
    for (const PairResult& p : search.pairs) q.pairs_not_ok += pair_status(p) != "ok";
    q.share_not_ok = q.pairs ? double(q.pairs_not_ok) / q.pairs : 0.0;
    double squares = 0;
    int counted = 0;
    for (const PairResult& s : search.skips)
        if (!s.weak && std::isfinite(s.disagreement)) squares += s.disagreement * s.disagreement, ++counted;
    if (counted) q.triplet_rms = std::sqrt(squares / counted);
    q.frames_unusable = int(search.frame_problems.size());
    // Projection matching that was not kept (the centres of mass placed the
    // views better) says nothing about the offsets written.
    if (matched && !matched->kept) matched = nullptr;
    if (matched && !matched->rms_move.empty()) {
        q.projection_rms = matched->rms_move.back();
        q.projection_max = matched->max_move.back();
    }
    if (plan.tilt_axis_auto) q.axis_standard_error = plan.tilt_axis_error;

    auto suspect = [&](const std::string& why) {
        if (q.verdict == Verdict::ok) q.verdict = Verdict::suspect;
        q.reasons.push_back(why);
    };
    if (q.pairs && q.share_not_ok >= kFailedShare) {
        q.verdict = Verdict::failed;
        q.reasons.push_back(format("%.0f of %.0f pairs not ok", q.pairs_not_ok, q.pairs));
    } else if (q.pairs_not_ok > 1 && q.share_not_ok > kSuspectShare) {
        suspect(format("%.0f of %.0f pairs not ok", q.pairs_not_ok, q.pairs));
    }
    if (q.triplet_rms > plan.flags.unreliable_px)
        suspect(format("triplets disagree by %.2f px RMS (more than unreliable_px %.2f)", q.triplet_rms,
                       plan.flags.unreliable_px));
    if (q.frames_unusable) suspect(format("%.0f frame(s) cannot be aligned", q.frames_unusable));
    if (matched && !matched->converged) suspect("projection matching did not converge");
    if (q.projection_max && *q.projection_max > kProjectionMovePx)
        suspect(format("projection matching's last round moved a view by %.2f px (more than %.1f)", *q.projection_max,
                       kProjectionMovePx));
    if (q.axis_standard_error && *q.axis_standard_error > kAxisErrorDeg)
        suspect(format("tilt axis standard error %.2f degrees (more than %.1f)", *q.axis_standard_error, kAxisErrorDeg));
    return q;
}

nlohmann::ordered_json quality_record(const RunQuality& q) {
    nlohmann::ordered_json j;
    j["verdict"] = name_of(q.verdict);
    j["reasons"] = q.reasons;
    j["pairs"] = q.pairs;
    j["pairs_not_ok"] = q.pairs_not_ok;
    j["share_not_ok"] = q.share_not_ok;
    j["triplet_rms_px"] = q.triplet_rms;  // null without least squares
    j["frames_unusable"] = q.frames_unusable;
    if (q.projection_rms) {
        j["projection_rms_px"] = *q.projection_rms;
        j["projection_max_px"] = *q.projection_max;
    }
    if (q.axis_standard_error) j["tilt_axis_standard_error"] = *q.axis_standard_error;
    return j;
}

std::string quality_line(const RunQuality& q) {
    std::string s = std::string("quality ") + name_of(q.verdict);
    for (std::size_t k = 0; k < q.reasons.size(); ++k) s += (k ? "; " : ": ") + q.reasons[k];
    return s;
}

}  // namespace stackalign
