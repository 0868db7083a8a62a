#include "flag_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "../../src/alignment/motion.hpp"
#include "../../src/alignment/pair_checks.hpp"
#include "../../src/alignment/solve_offsets.hpp"

namespace stackalign {

namespace {

// Pair i is unreliable when every triplet it belongs to (i-1 and i: pairs
// (i-1, i) with skip i-1, and (i, i+1) with skip i) disagrees. A skip whose
// own peak is weak says nothing; one that found no peak inside its range
// around the neighbours' prediction disagrees by at least that range.
void mark_unreliable(const PairFlagRules& rules, PairSearch& search) {
    const int n = int(search.pairs.size()), skips = int(search.skips.size());
    if (skips == 0) return;
    for (int t = 0; t < skips; ++t) {
        PairResult& skip = search.skips[t];
        skip.disagreement = skip.off_prediction ? INFINITY
                                                : triplet_inconsistency(search.pairs[t].shift, search.pairs[t + 1].shift,
                                                                        skip.shift, rules.half_width, rules.half_height);
    }
    for (int i = 0; i < n; ++i) {
        bool any = false, all_bad = true;
        for (int t : {i - 1, i})
            if (t >= 0 && t < skips && !search.skips[t].weak)
                any = true, all_bad &= search.skips[t].disagreement > rules.unreliable_px;
        search.pairs[i].unreliable = any && all_bad;
    }
}

}  // namespace

void flag_pairs(const PairFlagRules& rules, PairSearch& search, Verbosity verbosity) {
    std::vector<PairResult>& pairs = search.pairs;
    // A skip whose peak is no better than chance confirms nothing.
    for (PairResult& skip : search.skips)
        skip.weak = skip.peak.sharpness() < rules.min_sharpness || skip.confidence < rules.min_confidence;
    mark_unreliable(rules, search);
    std::vector<Shift> per_view;
    for (const PairResult& p : pairs) per_view.push_back({p.shift.dx / (p.mov - p.ref), p.shift.dy / (p.mov - p.ref)});
    const std::vector<double> z = robust_z(per_view);
    std::vector<bool> flagged(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        PairResult& p = pairs[i];
        p.z = z[i];
        p.weak = p.peak.sharpness() < rules.min_sharpness;
        p.outlier = p.z > rules.outlier_z;
        p.unsure = p.confidence < rules.min_confidence;  // false where not weighed (NaN)
        flagged[i] = p.weak || p.unsure || p.outlier || p.unreliable;
        if (!flagged[i]) continue;
        std::ostringstream m;
        m.precision(3);
        m << "pair " << p.ref << "-" << p.mov << ":";
        if (p.weak) m << " weak MI peak (sharpness " << p.peak.sharpness() << " < " << rules.min_sharpness << ")";
        if (p.unsure) m << " not above chance (confidence " << p.confidence << " < " << rules.min_confidence << ")";
        if (p.outlier) m << " outlying shift (" << p.shift.dx << ", " << p.shift.dy << "), robust z " << p.z;
        if (p.unreliable) m << " unreliable (its triplets disagree by more than " << rules.unreliable_px << " px)";
        m << (rules.on_outlier == OnOutlier::interpolate ? "; shift interpolated" : "; kept");
        log_line(verbosity, m.str());
    }
    if (rules.on_outlier != OnOutlier::interpolate) return;
    interpolate_flagged(per_view, flagged);
    // Rigid and similarity pairs: their angle and log scale per view too.
    const bool turned = std::any_of(pairs.begin(), pairs.end(), [](const PairResult& p) { return !p.shift.is_translation(); });
    std::vector<Shift> turn_per_view;
    for (const PairResult& p : pairs)
        turn_per_view.push_back({angle_of(p.shift) / (p.mov - p.ref), std::log(scale_of(p.shift)) / (p.mov - p.ref)});
    interpolate_flagged(turn_per_view, flagged);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        if (!flagged[i]) continue;
        const int gap = pairs[i].mov - pairs[i].ref;
        const Shift& d = per_view[i];
        const Shift& turn = turn_per_view[i];
        pairs[i].shift = turned ? rotation_scale(turn.dx * gap, std::exp(turn.dy * gap), d.dx * gap, d.dy * gap)
                                : Transform::translation(d.dx * gap, d.dy * gap);
        pairs[i].interpolated = true;
    }
}

std::string pair_status(const PairResult& p) {
    std::string s;
    for (const auto& [flag, name] : {std::pair{p.weak, "weak peak"}, {p.unsure, "not above chance"}, {p.outlier, "outlier"}, {p.unreliable, "unreliable"}})
        if (flag) s += (s.empty() ? "" : "; ") + std::string(name);
    if (s.empty()) s = "ok";
    return p.interpolated ? s + " (interpolated)" : s;
}

}  // namespace stackalign
