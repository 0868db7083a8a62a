// Flag stage: which pairs' answers stand out (a weak peak, a shift unlike
// its neighbours'), logged, and with on_outlier = "interpolate" their shifts
// replaced from their unflagged neighbours.
#pragma once
#include <string>
#include <vector>

#include "search_pairs.hpp"

namespace stackalign {

// With skip pairs (least squares), a neighbour pair is also "unreliable"
// when every triplet (i, i+1, i+2) it belongs to disagrees by more than
// rules.unreliable_px: its answer is not supported by the views around it.
void flag_pairs(const PairFlagRules& rules, PairSearch& search, Verbosity verbosity);

// "ok", or the flags joined by "; " ("weak peak; unreliable"), + " (interpolated)".
std::string pair_status(const PairResult& p);

}  // namespace stackalign
