// Window search between two quantized frames or volumes: for every integer
// shift s with |s.x| <= max_shift.x (and y, z), a similarity score (MI by
// default; NMI, NCC or the correlation ratio) between the reference window of
// `ref` and the same window moved by s in `mov`.
// A 2D search is the 3D one with depth 1 and max_shift.z = 0. The CPU twin is the
// reference; the CUDA twin (mi_search_cuda.cu) must produce the same integer
// histograms and the same winning shift.
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../src/core/choices.hpp"
#include "../../src/core/enum_names.hpp"
#include "../../src/core/host_device.hpp"
#include "../backend.hpp"
#include "../../src/core/image.hpp"

// The score formulas below are compiled for both twins from this one text.

namespace stackalign {

struct SearchWindow {
    int x = 0, y = 0, z = 0;    // first corner in the reference frame/volume
    int width = 0, height = 0, depth = 1;
};

// Where a window of the search's size starts; a landmark run searches many.
struct WindowCorner {
    int x = 0, y = 0, z = 0;
};

struct ShiftRange {
    int x = 0, y = 0, z = 0;    // half-ranges: shifts -x..x, -y..y, -z..z
};

// Where a search's range is centred: a skip pair is searched around what its
// two neighbour pairs predict, on the views as loaded (no shifted copy).
struct IntShift {
    int x = 0, y = 0, z = 0;
};

// Pixels between neighbouring candidates of a search, per axis.
struct ShiftStep {
    int x = 1, y = 1, z = 1;
};

// A peak's sharpness (MiPeak::sharpness) sets it against the mean and
// spread of the scores on a lattice of the candidates: per axis, every
// sharpness_step(half-range)-th one from the range's centre (all of them
// in half-ranges under 8; 9 to 15 per axis above). Why a lattice and not
// every candidate: a search that does not score them all (coarse_to_fine)
// scores the lattice at full resolution and then has the very sharpness
// of the exhaustive search wherever their peaks agree, so the two flag the
// same pairs weak and choose the same stretching. The block means' own
// map ran lower on sharp peaks and flagged more pairs (the Poisson compare
// case 0.052 px against 0.039).
STACKALIGN_HD inline int sharpness_step(int half_range) { return half_range >= 8 ? half_range / 4 : 1; }
// Candidate offset `k` (its index less the half-range) is on the lattice.
STACKALIGN_HD inline bool on_sharpness_lattice(int k, int half_range) { return k % sharpness_step(half_range) == 0; }

// What a candidate is scored by (Metric, src/core/choices.hpp), all
// functions of its joint histogram:
// - mi: mutual information H(A) + H(B) - H(A,B);
// - nmi: Studholme's normalised MI (H(A) + H(B)) / H(A,B), which does not
//   grow with the overlap's entropy;
// - ncc: Pearson correlation of the two windows' values (bin indices);
// - cr: the correlation ratio eta(Y|X) = 1 - sum_i N_i var_i(Y) / (N var(Y))
//   (Roche et al.), X = the reference window's bins, Y = the moving window's
//   values: how well a function of the reference predicts the moving image.
// "Values" are what preprocessing produced, at histogram resolution; with
// [preprocess] sobel = false they are the normalised intensities. The GPU
// twin's histogram strategies (HistogramStrategy) are listed there too.

// Shams & Barnes' bin-partitioned histogram: each of the block's threads owns
// joint bins [floor(B t / T), floor(B (t+1) / T)). The approximate variant
// samples systematically: thread t looks only at the window pixels whose
// index i has i % stride == t % stride, so pixel i is counted exactly when
// owner(its bin) % stride == i % stride (about one pixel in `stride`).
constexpr int kPartitionThreads = 256;
constexpr int kPartitionSampleStride = 8;
STACKALIGN_HD inline int partition_owner(int joint_bin, int joint_bins, int threads) {
    return int(((static_cast<long long>(joint_bin) + 1) * threads - 1) / joint_bins);
}

struct MiSearchParams {
    int bins = 64;
    Metric metric = Metric::mi;
    // 1: every window pixel is counted. > 1: the bin-partitioned sampled
    // approximation above (both twins count the same pixels).
    int sample_stride = 1;
    SearchWindow window;
    ShiftRange max_shift;
    IntShift centre;  // candidates are centre + step x the shifts below
    // 1: every shift of the range. > 1: every step-th shift, index i being
    // step x i from the centre (coarse_to_fine scores the sharpness lattice
    // below this way).
    ShiftStep step;
    int side_x() const { return 2 * max_shift.x + 1; }
    int side_y() const { return 2 * max_shift.y + 1; }
    int side_z() const { return 2 * max_shift.z + 1; }
    // Candidate i is the shift centre + step x (i % side_x - m.x, i / side_x % side_y - m.y, i / (side_x side_y) - m.z).
    int candidates() const { return side_x() * side_y() * side_z(); }
    std::int64_t window_pixels() const { return std::int64_t(window.width) * window.height * window.depth; }
};

// The parameters a strategy searches with: the sampled bin-partitioned
// strategy counts one pixel in kPartitionSampleStride, on either twin.
inline MiSearchParams sampled_as(MiSearchParams p, HistogramStrategy s) {
    p.sample_stride = s == HistogramStrategy::bin_partitioned_sampled ? kPartitionSampleStride : 1;
    return p;
}
// The kernel that makes a strategy's histograms: the sampled one is the
// bin-partitioned kernel over the sample (sampled_as).
inline HistogramStrategy kernel_strategy(HistogramStrategy s) {
    return s == HistogramStrategy::bin_partitioned_sampled ? HistogramStrategy::bin_partitioned : s;
}

// A 2D search of a size x size window at (x, y), shifts up to max_shift in x and y.
MiSearchParams square_search(int bins, int x, int y, int size_x, int size_y, int max_shift);

// Empty when the window moved by every shift in range (about the centre) stays inside a
// width x height x depth frame; otherwise says which side it leaves by.
std::string window_overflow(const MiSearchParams& p, int width, int height, int depth = 1);
// Throws InputError with that text.
void check_window_fits(const MiSearchParams& p, int width, int height, int depth = 1);

// The winner of one search and what the caller needs to refine and judge it.
struct MiPeak {
    int dx = 0, dy = 0, dz = 0; // best integer shift of `mov` relative to `ref`, less `centre`
    IntShift centre;          // the search's centre (MiSearchParams::centre)
    double mi = 0;            // MI at the best shift (nats)
    double around[3][3];      // MI at (dy-1..dy+1, dx-1..dx+1) in the plane dz; NaN outside the range
    double around_z[3];       // MI at dz-1, dz, dz+1 for (dx, dy); NaN outside the range
    double mean = 0;          // mean and standard deviation of MI over all candidates
    double stddev = 0;
    double sharpness() const { return stddev > 0 ? (mi - mean) / stddev : 0.0; }
};

// c*log(c) for every count a window can produce, so both twins sum the very
// same doubles and entropy costs a lookup, not a log.
std::vector<double> nlogn_table(std::int64_t max_count);
// The same, one table for every search of the process, grown when a larger
// count is asked for (an entry does not depend on the size asked for): a
// window's worth of logarithms per pair was a few per cent of a small CPU
// search, and 3-4 ms per GPU searcher made for a 512^2 window.
std::shared_ptr<const std::vector<double>> shared_nlogn_table(std::int64_t max_count);

// MI = H(A) + H(B) - H(A,B) in nats, from a bins x bins joint histogram
// (row = reference bin, column = moving bin).
double mi_from_histogram(const std::uint32_t* hist, int bins, const std::vector<double>& nlogn);
// How the score's pass treats empty cells: `skip` tests each group of four
// and passes over empty ones (sparse histograms, as the nonzero lists'
// frames give), `add` adds their c log c of 0 without a test (fuller ones:
// there the test mispredicted about every other group). The same sums in
// the same order either way, so the same score.
enum class EmptyCells { skip, add };
// The metric's score from the same histogram; NMI of a window with no
// entropy at all (every pair in one bin) is 1, as for independent images.
double score_from_histogram(const std::uint32_t* hist, int bins, const std::vector<double>& nlogn, Metric metric,
                            EmptyCells empty = EmptyCells::skip);
// Both twins finish the score the same way from the three sums.
inline double score_from_sums(double marginals, double joint, double n, Metric metric) {
    if (n <= 0) return metric == Metric::nmi ? 1.0 : 0.0;
    const double log_n = std::log(n);
    if (metric == Metric::mi) return log_n - (marginals - joint) / n;
    const double h_joint = log_n - joint / n, h_sum = 2 * log_n - marginals / n;
    return h_joint > 1e-12 ? h_sum / h_joint : 1.0;
}

// NCC from exact integer moments of the pair (values a, b): count, sums,
// sums of squares and of products. 0 when either window is constant.
STACKALIGN_HD inline double ncc_from_moments(unsigned long long n, unsigned long long sa, unsigned long long sb,
                                             unsigned long long saa, unsigned long long sbb, unsigned long long sab) {
    const double N = double(n);
    const double cov = N * double(sab) - double(sa) * double(sb);
    const double va = N * double(saa) - double(sa) * double(sa), vb = N * double(sbb) - double(sb) * double(sb);
    return (va > 0 && vb > 0) ? cov / sqrt(va * vb) : 0.0;
}

// What the correlation ratio needs of the moving values Y over the pixels
// whose reference bin is i: their count, sum and sum of squares.
struct BinMoments {
    unsigned long long n = 0, s = 0, q = 0;
};
// eta from per-reference-bin moments, added in bin order (so both twins
// round the same way). 0 when the moving window is constant.
struct CrAccumulator {
    unsigned long long n = 0, s = 0, q = 0;
    double within = 0;  // sum over bins of N_i var_i(Y)
    STACKALIGN_HD void add(unsigned long long ni, unsigned long long si, unsigned long long qi) {
        if (ni == 0) return;
        n += ni;
        s += si;
        q += qi;
        within += double(qi) - double(si) * double(si) / double(ni);
    }
    STACKALIGN_HD double finish() const {
        if (n == 0) return 0.0;
        const double total = double(q) - double(s) * double(s) / double(n);
        return total > 1e-9 * (double(q) + 1.0) ? 1.0 - within / total : 0.0;
    }
};
STACKALIGN_HD inline double cr_from_moments(const BinMoments* m, int bins) {
    CrAccumulator acc;
    for (int i = 0; i < bins; ++i) acc.add(m[i].n, m[i].s, m[i].q);
    return acc.finish();
}

// Picks the winner from a full MI map (candidate order as above). Ties
// (within 1e-9 relative) go to the smallest |sx|+|sy|+|sz|, then to the
// lowest candidate index (smallest sz, then sy, then sx), so CPU and GPU
// agree even when their last bits differ. The peak's shift and the tie
// rule count `step` pixels a candidate; its neighbours are the map's; its
// mean and stddev are the sharpness lattice's.
MiPeak peak_from_map(const std::vector<double>& map, const ShiftRange& max_shift, const ShiftStep& step = {});

// The one entry point: the search of `p` on the device's backend
// (`strategy` picks the GPU's histogram kernel; `automatic` takes the first
// one that fits, see cuda::strategies).
MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, HistogramStrategy strategy,
                 const Device& device);

namespace cpu {

// Joint histogram (bins*bins counts) for one candidate shift (with
// p.sample_stride > 1, of the bin-partitioned sample).
void joint_histogram(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy, int sz,
                     std::uint32_t* hist);

// Correlation-ratio moments (bins of them, by reference bin) for one shift.
void cr_moments(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, int sx, int sy, int sz,
                BinMoments* out);

// The score of every candidate, in candidate order.
std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p);
// How the map's histograms are counted: every window pixel (dense), or the
// nonzero pixels' lists (sparse; the dense pass still for the sampled
// strategy and for search boxes over 65535 px wide), or
// whichever the frames' densities say is sooner (automatic, mi_map's
// choice). All three give the same histograms; tests compare them.
enum class CpuHistograms { automatic, dense, sparse };
std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, CpuHistograms how);

MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p);

}  // namespace cpu

// The GPU twins (mi_search_cuda.cu), callable from host code: each call
// uploads, searches and downloads, for tests and benchmarks; the pipelines
// use a PairSearcher, which keeps frames on the device.
namespace cuda {

// Exact strategies this device can run for these parameters (metric and
// sample_stride included), fastest first; `automatic` times them.
std::vector<HistogramStrategy> strategies(const MiSearchParams& p, int gpu = 0);
// Joint histograms of every candidate, candidate-major (index as in mi_map).
std::vector<std::uint32_t> joint_histograms(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                            HistogramStrategy strategy, int gpu = 0);
// Correlation-ratio moments of every candidate, candidate-major, bins per
// candidate (strategies presorted and cr_atomic).
std::vector<BinMoments> cr_moments(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                   HistogramStrategy strategy, int gpu = 0);
// `presorted_workload` > 0 overrides the presorted policy's pixels per block.
std::vector<double> mi_map(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                           HistogramStrategy strategy, int gpu = 0, int presorted_workload = 0);
MiPeak mi_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, HistogramStrategy strategy,
                 int gpu = 0);
// One search per corner, at most `windows_per_launch` windows per launch (0: as memory allows).
std::vector<MiPeak> mi_search_windows(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                                      const std::vector<WindowCorner>& corners, HistogramStrategy strategy,
                                      int windows_per_launch = 0, int gpu = 0);
// The policy one search used, and for adaptive the configuration it made.
std::string describe_search(const BinImage& ref, const BinImage& mov, const MiSearchParams& p,
                            HistogramStrategy strategy, int gpu = 0);
// Times one pair search (kernel time only, ms, median of `repeats`).
double time_search_ms(const BinImage& ref, const BinImage& mov, const MiSearchParams& p, HistogramStrategy strategy,
                      int repeats, int gpu = 0, int presorted_workload = 0);

}  // namespace cuda
}  // namespace stackalign
