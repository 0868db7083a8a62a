// The CUDA backend as plain C++: host code includes this, never a CUDA
// header. In a build without nvcc, cuda_unavailable.cpp provides these and
// says why the GPU cannot be used.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pair_searcher.hpp"

namespace stackalign::cuda {

bool compiled_in();
int device_count();                       // 0 when no usable GPU or driver
std::string device_name(int gpu);

std::unique_ptr<PairSearcher> make_pair_searcher(const SearchSetup& setup);

// Twins of the CPU functions, for tests and benchmarks.
BinImage preprocess(const RawFrame& frame, const PreprocessParams& params, int gpu = 0);
MtbProjections mtb_projections(const RawFrame& frame, const MtbParams& p, int gpu = 0);
std::vector<std::uint32_t> brightness_histogram(const RawFrame& frame, int gpu = 0);
// Joint histograms of every candidate, candidate-major (index as in mi_map).
std::vector<std::uint32_t> joint_histograms(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                            const std::string& strategy, int gpu = 0);
// Correlation-ratio moments of every candidate, candidate-major, bins per
// candidate (strategies "presorted" and "cr-atomic").
std::vector<BinMoments> cr_moments(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                   const std::string& strategy, int gpu = 0);
std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                           const std::string& strategy, int gpu = 0);
MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, const std::string& strategy,
                 int gpu = 0);
// One search per corner, at most `windows_per_launch` windows per launch (0: as memory allows).
std::vector<MiPeak> mi_search_windows(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                      const std::vector<WindowCorner>& corners, const std::string& strategy,
                                      int windows_per_launch = 0, int gpu = 0);
// Exact strategies this device can run for these parameters (metric and
// sample_stride included), fastest first.
std::vector<std::string> strategies(const MiSearchParams& p, int gpu = 0);
// The policy one search used, and for "adaptive" the configuration it made.
std::string describe_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                            const std::string& strategy, int gpu = 0);
// Times one pair search (kernel time only, ms, median of `repeats`).
double time_search_ms(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, const std::string& strategy,
                      int repeats, int gpu = 0);

}  // namespace stackalign::cuda
