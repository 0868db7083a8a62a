// Flag stage: which pairs' answers stand out (a weak peak, a shift unlike
// its neighbours'), logged, and with on_outlier = "interpolate" their shifts
// replaced from their unflagged neighbours.
#pragma once
#include <string>
#include <vector>

#include "search_pairs.hpp"

namespace stackalign {

void flag_pairs(const PairFlagRules& rules, std::vector<PairResult>& pairs, Verbosity verbosity);

// "ok", "weak peak", "outlier", "weak peak; outlier", "+ (interpolated)".
std::string pair_status(const PairResult& p);

}  // namespace stackalign
