// How far each pair's peak stands above chance: evidence of a pair that does
// not come from its neighbours.
//
// A flat, noisy score surface has a highest point too, sharp against the
// surface's mean ((max - mean) / sd reached 5-11 on sections that did not
// match, above any usable min_sharpness), and a skip pair searched about
// its neighbours' sum finds a peak there and confirms them. A real peak is
// told from a lucky one by a null: the same reference searched, over the
// same window and range, against its moving view turned by 180 degrees,
// which keeps the view's intensities, edges and texture and loses the
// correspondence. A pair's confidence is 1 - null / peak (MI), clamped to
// [0, 1]: 0 where the peak is no higher than the best chance match.
//
// The best of the same pair's scores far from its peak was tried as the
// null first and discarded: a real pair of smooth content keeps high MI
// over pixels around its peak (the sample time-lapse's pairs: confidence
// 0.13-0.3 that way, 0.58-0.94 against the turned view).
#pragma once
#include <map>
#include <utility>

#include "../plan/stack_plan.hpp"
#include "search_pairs.hpp"

namespace stackalign {

// Null scores by (ref, mov) view pair, kept across the ways a series is
// aligned (cosine_stretch = "auto": the null does not depend on the stretch).
using ChanceScores = std::map<std::pair<int, int>, double>;

// Sets `null_mi` and `confidence` of every pair and skip of `search` whose
// views can be aligned (NaN otherwise), searching the nulls `chance` does
// not hold yet: one search per pair and per skip, on the plan's searchers,
// over the null lattice (null_search). Nothing where the
// plan's min_confidence is 0. Adds its time to `times.search`.
void weigh_pairs_against_chance(const StackPlan& plan, FrameReader& frames, PairSearch& search, ChanceScores& chance,
                                StageTimes& times, Verbosity verbosity);

// Where the null is searched: every shift of ranges under 8 px, else every
// (sharpness step / 2)-th per axis (2-3 px: a chance surface's highs are
// wider than that). An exhaustive null would score every shift where a
// coarse-to-fine pair search scores a few hundred (the standard job's
// +-24 px: 2401 against 289 on this lattice); and a lattice is the same
// candidates on either backend, so CPU and GPU give the same confidence
// whichever way each searched the pair. The standard job (121 x 1024^2,
// `build/bench gpu`) with it on the H200 host: cpu 5.25 s (search 1.65),
// cuda 0.71 s.
struct NullLattice {
    ShiftRange reach;
    ShiftStep step;
};
NullLattice null_lattice(const ShiftRange& range);

// How the null is searched for pairs of `pairs` on width x height frames:
// the null lattice, and for a 2D window of kSampledNullPixels or more whose
// lattice steps are even, on every 2nd pixel of every 2nd row (PixelSample,
// from the window's corner): the lattice's shifts move a sample onto
// itself. A 61 x 5760 x 4092 series' nulls, 289 shifts of a 16 M px window
// each, were 15 % of its GPU time (docs/benchmarks.md). A sample's MI
// scores the same kind of value pairs, fewer of them: its chance highs
// are on average higher (the estimate's bias and spread grow as its pixels
// fall), so a pair's confidence comes out, if anything, a little lower
// (on the K3 bench series 0.971-0.993 against 0.971-0.994).
constexpr long long kSampledNullPixels = 1LL << 22;
struct NullSearch {
    SearchSetup setup;  // the searcher's: window and range in the sample's pixels, peaks only
    PixelSample sample;
    NullLattice lattice;  // in the sample's pixels
};
NullSearch null_search(const SearchSetup& pairs, int width, int height);

// `frame` turned by 180 degrees about its centre (its pixels in reverse order);
// turn_half_way writes it into `out`, reusing its buffer.
RawFrame turned_half_way(const RawFrame& frame);
void turn_half_way(const RawFrame& frame, RawFrame& out);

// 1 - null / peak, clamped to [0, 1] (0 where the peak is not above 0).
double confidence_from(double peak_mi, double null_mi);

}  // namespace stackalign
