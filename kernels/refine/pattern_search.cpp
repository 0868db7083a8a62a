#include "pattern_search.hpp"

#include <cmath>

namespace stackalign {

PatternSearchResult pattern_search(const std::vector<double>& unit, const BatchScores& scores, bool polish) {
    const int params = int(unit.size());
    PatternSearchResult r;
    r.theta.assign(params, 0.0);
    double best = NAN;
    std::vector<double> last;  // the last batch's scores: theta, then +-step per parameter
    double last_step = 0;
    for (double step = 1.0; step >= 1.0 / 64; step /= 2) {
        for (int move = 0; move < 8; ++move) {
            std::vector<std::vector<double>> candidates = {r.theta};
            for (int k = 0; k < params; ++k)
                for (int sign : {1, -1}) {
                    std::vector<double> c = r.theta;
                    c[k] += sign * step * unit[k];
                    candidates.push_back(c);
                }
            const std::vector<double> s = scores(candidates);
            ++r.batches;
            r.evaluations += int(candidates.size());
            int winner = 0;
            for (std::size_t i = 0; i < s.size(); ++i)
                if (s[i] > s[winner]) winner = int(i);
            if (std::isnan(best)) r.score_start = s[0];
            best = s[winner];
            last = s, last_step = step;
            if (winner == 0) break;  // no step of this size improves: a finer one
            r.theta = candidates[winner];
        }
    }
    if (polish && last.size() == std::size_t(1 + 2 * params) && best == last[0]) {
        std::vector<double> moved = r.theta;
        for (int k = 0; k < params; ++k) {
            const double up = last[1 + 2 * k], down = last[2 + 2 * k], denom = up - 2 * last[0] + down;
            if (denom < 0) moved[k] += std::fmax(-0.5, std::fmin(0.5, 0.5 * (down - up) / denom)) * last_step * unit[k];
        }
        const std::vector<double> s = scores({moved});
        ++r.batches, ++r.evaluations;
        if (s[0] > best) r.theta = moved, best = s[0];
    }
    r.score_end = best;
    return r;
}

}  // namespace stackalign
