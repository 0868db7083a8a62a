// The choices a config names that the kernels act on: which backend, which
// metric and histogram strategy, how a peak is refined. They live here, below
// both src/config and kernels/, so reading a config never needs a kernel's
// header; each keeps its spelling once (enum_names.hpp).
#pragma once
#include <string>

#include "enum_names.hpp"

namespace stackalign {

// What a config or the command line asks for.
enum class BackendRequest { automatic, cpu, cuda };
template <>
struct EnumNames<BackendRequest> {
    static constexpr const char* names[] = {"auto", "cpu", "cuda"};
};

// How a search's integer peak is refined: not at all, by a parabola through
// the scores of its neighbours (pulled towards whole pixels), or by the
// continuous search of kernels/refine/ (the default).
enum class Subpixel { off, parabola, continuous };
template <>
struct EnumNames<Subpixel> {
    static constexpr const char* names[] = {"off", "parabola", "continuous"};
};

// Gaussian smoothing of both frames before the continuous refinement,
// pixels: the most, and the default where the data do not choose
// (pipelines/stages/refine_smoothing.hpp); and the least a config may ask.
constexpr float kRefineSigma = 1.0f;
constexpr float kRefineSigmaMin = 0.5f;

// Each candidate shift's score, from the joint histogram of the two windows'
// bins (kernels/mi_search/mi_search.hpp says how each is computed).
enum class Metric { mi, nmi, ncc, cr };
template <>
struct EnumNames<Metric> {
    static constexpr const char* names[] = {"mi", "nmi", "ncc", "cr"};
};
inline std::string to_string(Metric m) { return name_of(m); }

// How the GPU twin fills each candidate's histogram (mi_search_policy.cuh);
// every exact strategy gives the same histograms, so the CPU twin ignores
// the choice except for the sampled one, which counts fewer pixels (both
// twins sample alike). `automatic` times the exact ones on the first pair;
// `presorted` and `cr_atomic` compute the correlation ratio only.
enum class HistogramStrategy {
    automatic, zero_slot, shared, replicated, adaptive, bin_partitioned, bin_partitioned_sampled, presorted, cr_atomic
};
template <>
struct EnumNames<HistogramStrategy> {
    static constexpr const char* names[] = {"auto",       "zero-slot",       "shared",
                                            "replicated", "adaptive",        "bin-partitioned",
                                            "bin-partitioned-sampled", "presorted", "cr-atomic"};
};
inline bool computes_cr_only(HistogramStrategy s) {
    return s == HistogramStrategy::presorted || s == HistogramStrategy::cr_atomic;
}

// Histogram bins per axis, at most (the config refuses more).
constexpr int kMaxBins = 256;

// window: every candidate shift scored by a histogram metric (mi_search);
// mtb_projection: Guthier et al.'s bitmap projections (mtb_projection.hpp),
// which use the raw frames, not the preprocessed bins.
enum class SearchMethod { window, mtb_projection };
template <>
struct EnumNames<SearchMethod> {
    static constexpr const char* names[] = {"window", "mtb-projection"};
};

// What follows a landmark fit: nothing, or the global refinement
// (kernels/refine/global_refine.hpp).
enum class FitRefinement { none, global };
template <>
struct EnumNames<FitRefinement> {
    static constexpr const char* names[] = {"none", "global"};
};

}  // namespace stackalign
