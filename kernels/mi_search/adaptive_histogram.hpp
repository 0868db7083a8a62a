// Brosch & Tam's self-optimizing histogram (2009), the host half: from a
// first joint histogram of a pair, decide per joint bin where the GPU counts
// it. Level 0: straight into the candidate's global histogram; level l > 0:
// in 2^(l-1) shared-memory replicas, a warp's lane picking one, so hot bins
// see fewer same-address collisions. Levels are chosen greedily to minimise
// the expected cost of one warp-wide update step under a binomial collision
// model, within the shared-memory slots a block can spare. The (0,0) bin is
// never counted (the search derives it), so it is never cached.
//
// Their thread-tag trick emulated shared atomics on hardware that lacked
// them; Hopper has native shared atomics, so only the model and the caching
// are kept (kernels/mi_search/mi_search_cuda.cu).
#pragma once
#include <cstdint>
#include <vector>

namespace stackalign {

// Relative costs of one update, in units of an uncontended shared atomic.
struct AdaptiveCosts {
    double global_update = 8;     // an atomic to L2
    double global_collision = 8;  // each extra same-address global atomic in one warp step
    double shared_update = 1;
    double shared_collision = 1;  // each extra same-address shared atomic in one warp step
    int warp = 32;
};

struct AdaptiveConfig {
    std::vector<int> level;     // per joint bin
    std::vector<int> offset;    // first shared slot of a cached bin (-1 if level 0)
    int slots = 0;              // shared words the cached bins use
    double expected_cost = 0;   // per warp step, of this configuration
    double global_cost = 0;     // per warp step, with every bin in global memory
    std::vector<double> source; // the normalised histogram it was made for
    int replicas(int bin) const { return level[bin] ? 1 << (level[bin] - 1) : 0; }
};

// Expected collisions when n threads each hit one slot with probability p:
// E[hits] - P(at least one hit) = n p + (1 - p)^n - 1.
double expected_collisions(int n, double p);

// Expected cost per warp step of bin probability p at `level`.
double bin_cost(double p, int level, const AdaptiveCosts& c);

// Greedy: start with every bin global; repeatedly raise the level of the bin
// whose next level saves the most cost per extra slot, while slots remain
// and the saving is positive.
AdaptiveConfig optimise_adaptive(const std::uint32_t* hist, int bins, int capacity_slots, const AdaptiveCosts& c = {});

// Total-variation distance between the histogram the configuration was made
// for and `hist` (both without the (0,0) bin): 0 = same shape, 1 = disjoint.
double histogram_drift(const AdaptiveConfig& config, const std::uint32_t* hist, int bins);

}  // namespace stackalign
