// Search stage of a stack job: every pair of neighbouring kept views,
// preprocessed, searched and refined, on the CPU, one GPU or several GPUs
// through one loop.
#pragma once
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../../src/alignment/transform.hpp"
#include "../plan/stack_plan.hpp"

namespace stackalign {

// One searched pair of neighbouring kept views.
struct PairResult {
    int ref = 0, mov = 0;                // view indices (mov > ref; views between are excluded)
    MiPeak peak;
    Shift measured;                      // content offset of mov relative to ref, as searched (subpixel)
    Transform shift;                     // the same in the unstretched views, after any interpolation
    double stretch = 1;                  // cosine stretch factor applied to the higher-tilt view
    bool weak = false, outlier = false, interpolated = false;
    double z = 0;                        // robust z-score of shift / (mov - ref)
    bool unreliable = false;             // the pair's triplets disagree (flag_pairs)
    bool off_prediction = false;         // skip pairs: the peak on the edge of the range around the prediction
    // false: a skip left at its integer peak by a search that only weighs
    // triplets (KnownPairs::triplets_only), as it cannot weigh its own
    bool refined = true;
    // The best score of the reference against the moving view turned by 180
    // degrees, and 1 - that / peak.mi (pair_confidence.hpp); NaN until weighed.
    double null_mi = std::nan(""), confidence = std::nan("");
    bool unsure = false;                 // confidence below the flags' min_confidence
    double disagreement = 0;             // skip pairs: |neighbours' sum - skip| (infinite when off_prediction; flag_pairs)
    double residual = 0;                 // |solved offsets' difference - shift| (least squares)
    // refine_metric = "auto": Pearson's r of the pair's smoothed values at
    // the search's answer, which chose the refinement's metric (auto_refine_params)
    std::optional<double> linear_r;
};

// Where one searcher's time went (run.json "searchers"): what a job with
// several at once waits on. Seconds of its own thread; `wall` from its
// first task to its last, `waiting` for the neighbour pairs of its skips.
struct SearcherTimes {
    int pairs = 0, loads = 0;
    bool skips_only = false;  // a skip searcher, waiting on the chains
    double reading = 0, loading = 0, search = 0, refine = 0, waiting = 0, wall = 0;
};

struct PairSearch {
    std::vector<PairResult> pairs;       // pairs[i]: kept[i] -> kept[i + 1]
    std::vector<PairResult> skips;       // least squares: skips[i]: kept[i] -> kept[i + 2]
    std::string backend_description;
    std::map<int, std::string> frame_problems;  // searched views that cannot be aligned, and why (logged as warnings)
    int views_preprocessed = 0;  // loads into a searcher's slots (a view once, plus one-pair copies)
    std::vector<SearcherTimes> searchers;
    bool stopped = false;  // a StopWhen ended it: only the entries it was shown done are results
};

// With cosine stretching each pair is searched outward from the reference,
// so that one view of it is already placed: the higher-tilt view is
// stretched about the placed view's tilt-axis position (docs/tilt_series.md).
// The pairs are split into contiguous runs, each searched by a searcher of
// its own at the same time (on the CPU's threads, several per GPU, and over
// the plan's GPUs); with stretching, the reference's right and left.
// Without stretching, a searcher whose run is done takes the tail of the
// longest run left (pair_tasks.hpp). A pair's result does not depend on
// which searcher took it.
//
// `known`: pairs searched already (the refinement-smoothing trial's, on the
// views around the reference): one of the same views and step is not
// searched again. Taken whole where `refined` (it was refined at this
// plan's smoothing and is what this search would give); otherwise only its
// integer peak is taken, which the smoothing does not change, and it is
// refined here (a skip only where its neighbours still predict the centre
// it was searched about). With cosine stretching only the peaks of views
// as read are taken (cosine_stretch = "auto"): a stretched view is
// stretched about where the refined chain placed its neighbour, which
// another smoothing moves.
//
// `triplets_only`: the search is for weighing triplets (the smoothing
// trial's larger smoothing). A skip that cannot weigh its triplet
// (skip_weighs_triplet) is left at its integer peak, unrefined, and marked
// so; a later search given it as `refined` refines it there itself.
struct KnownPairs {
    const PairSearch* found = nullptr;
    bool refined = false;
    bool triplets_only = false;
};

// Whether a skip pair can weigh its triplet's closure: its peak is neither
// weak (below the flags' min_sharpness) nor on the edge of the range about
// its prediction. Both are its integer peak's, known before refining it.
bool skip_weighs_triplet(const StackPlan& plan, const PairResult& skip);

// The kept views the search could align (none of its frame_problems), ascending.
std::vector<int> usable_views(const StackPlan& plan, const PairSearch& found);

// The triplets' squared disagreements (triplet_inconsistency) summed (t
// ascending) and counted, over those whose pairs and skip are all done
// (every one where `pair_done` is null). A skip whose peak is weak or off
// its prediction says nothing.
struct TripletSums {
    double squares = 0;
    int used = 0;
    double rms() const;  // NaN without a usable triplet
};
TripletSums triplet_sums(const StackPlan& plan, const PairSearch& found, const std::vector<bool>* pair_done,
                         const std::vector<bool>* skip_done);

// `stop_when`, where given, is asked each time a pair or skip is finished
// while others remain, under the search's lock: the search so far, and
// which of its pairs and skips are done (the other entries may still be
// being written, so it reads only those). Once it says true no searcher
// starts another, and the search returns marked `stopped`.
using StopWhen = std::function<bool(const PairSearch& so_far, const std::vector<bool>& pair_done,
                                    const std::vector<bool>& skip_done)>;
PairSearch search_pairs(const StackPlan& plan, FrameReader& frames, StageTimes& times, Verbosity verbosity,
                        const KnownPairs& known = {}, const StopWhen& stop_when = {});

// Where a skip pair predicted at (dx, dy) by its two neighbours is searched,
// so the range need not double: the window method searches the views as
// loaded about that centre; where that would leave the frame (or for
// another method) the moving view is loaded moved there by whole pixels
// (exact) and searched about 0.
struct SkipPlacement {
    IntShift centre;
    int shift_x = 0, shift_y = 0;  // the moving view's pre-shift
};
SkipPlacement place_skip(const StackPlan& plan, double dx, double dy);

}  // namespace stackalign
