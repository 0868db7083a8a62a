#include "flag_pairs.hpp"

#include <sstream>

#include "../../src/alignment/pair_checks.hpp"

namespace stackalign {

void flag_pairs(const PairFlagRules& rules, std::vector<PairResult>& pairs, Verbosity verbosity) {
    std::vector<Shift> per_view;
    for (const PairResult& p : pairs) per_view.push_back({p.shift.dx / (p.mov - p.ref), p.shift.dy / (p.mov - p.ref)});
    const std::vector<double> z = robust_z(per_view);
    std::vector<bool> flagged(pairs.size());
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        PairResult& p = pairs[i];
        p.z = z[i];
        p.weak = p.peak.sharpness() < rules.min_sharpness;
        p.outlier = p.z > rules.outlier_z;
        flagged[i] = p.weak || p.outlier;
        if (!flagged[i]) continue;
        std::ostringstream m;
        m.precision(3);
        m << "pair " << p.ref << "-" << p.mov << ":";
        if (p.weak) m << " weak MI peak (sharpness " << p.peak.sharpness() << " < " << rules.min_sharpness << ")";
        if (p.outlier) m << " outlying shift (" << p.shift.dx << ", " << p.shift.dy << "), robust z " << p.z;
        m << (rules.on_outlier == OnOutlier::interpolate ? "; shift interpolated" : "; kept");
        log_line(verbosity, m.str());
    }
    if (rules.on_outlier != OnOutlier::interpolate) return;
    interpolate_flagged(per_view, flagged);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        if (!flagged[i]) continue;
        const int gap = pairs[i].mov - pairs[i].ref;
        pairs[i].shift = Transform::translation(per_view[i].dx * gap, per_view[i].dy * gap);
        pairs[i].interpolated = true;
    }
}

std::string pair_status(const PairResult& p) {
    std::string s = p.weak && p.outlier ? "weak peak; outlier" : p.weak ? "weak peak" : p.outlier ? "outlier" : "ok";
    return p.interpolated ? s + " (interpolated)" : s;
}

}  // namespace stackalign
