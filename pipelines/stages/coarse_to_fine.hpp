// [search] coarse_to_fine: a pair searcher that scores the shift range on
// block means first and then only the full-resolution shifts near that
// peak. The exhaustive search scores every shift at full resolution, and on
// the CPU that is most of a job (issue #19). `bench coarse` measured it on
// the sample stacks: the same integer peak and sharpness on every pair but
// one weak time-lapse pair 6 frames apart, 3-4x less CPU time.
//
// Each view is loaded twice, into the fine searcher's slot and, as block
// means, into the coarse one's. A search about `centre` scores:
// - the sharpness lattice of the range (mi_search.hpp) at full resolution,
//   which gives the peak the exhaustive search's mean and stddev, so both
//   flag the same pairs weak and stretch alike where their peaks agree;
// - the coarse range about centre / bin (where it fits the coarse frame),
//   on half the bins;
// - the full-resolution shifts within 2 px of bin x that peak, and again
//   about the best of those while it is on that reach's rim (not on the
//   range's); the same from the lattice's best where that lies farther
//   away, the better of the two kept.
// The peak's MI and its neighbours' (the parabola, the refinement's start)
// are full-resolution scores. Ranges under 8 px are searched whole (every
// shift is on their lattice). Everything else (refinement, features, near
// and window searches) is the fine searcher's.
#pragma once
#include <memory>

#include "../../kernels/pair_searcher.hpp"
#include "../plan/stack_plan.hpp"

namespace stackalign {

// `fine` searches `setup` on frames of width x height; the coarse level is
// `bin` x `bin` block means (coarse_setup).
std::unique_ptr<PairSearcher> make_coarse_to_fine(const Device& device, const SearchSetup& setup,
                                                  SearcherPriority priority, int bin, int width, int height);

// The searcher a job's pairs are searched with on `device`: coarse to fine
// where the plan bins the search (StackPlan::coarse_bin), else the plain one.
std::unique_ptr<PairSearcher> make_pairs_searcher(const StackPlan& plan, const Device& device,
                                                  SearcherPriority priority);

}  // namespace stackalign
