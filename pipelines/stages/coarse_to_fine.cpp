#include "coarse_to_fine.hpp"

#include <algorithm>
#include <cmath>

#include "search_motion.hpp"

namespace stackalign {
namespace {

// Full-resolution shifts this far about the coarse peak: a block mean's
// peak lies within bin / 2 + 1 of the fine one's on the sample stacks.
constexpr int kFineReach = 2;
// Moves of the fine reach while its best is on its rim, at most.
constexpr int kFineMoves = 8;

int nearest_multiple(int v, int bin) { return int(std::lround(double(v) / bin)); }

// The block means' search: half the bins (at least 16). A score reads every
// cell of its bins^2 histogram, and the block means' windows are a quarter
// of the pixels: with 64 bins the scores took more than the histograms.
SearchSetup coarse_level(const SearchSetup& fine, int bin, int width, int height) {
    SearchSetup s = coarse_setup(fine, bin, width, height);
    s.preprocess.bins = s.search.bins = std::max(16, fine.search.bins / 2);
    return s;
}

class CoarseToFineSearcher : public PairSearcher {
public:
    CoarseToFineSearcher(const Device& device, const SearchSetup& setup, SearcherPriority priority, int bin,
                         int width, int height)
        : setup_(setup), coarse_setup_(coarse_level(setup, bin, width, height)), bin_(bin),
          fine_reach_(std::max(kFineReach, bin / 2 + 1)),
          coarse_width_(width / bin), coarse_height_(height / bin),
          fine_(make_pair_searcher(device, setup, priority)),
          coarse_(make_pair_searcher(device, coarse_setup_, priority)) {}

    void load(int slot, const RawFrame& frame, const LoadOptions& how) override {
        fine_->load(slot, frame, how);
        coarse_->load(slot, block_mean(frame, bin_), load_options(false, false));
    }
    void load_warped(int slot, const RawFrame& frame, const LinearTransform& warp, double fill,
                     const LoadOptions& how) override {
        fine_->load_warped(slot, frame, warp, fill, how);
        // X' = A (X - c) + D + c at full resolution is, on the block means
        // (pixel x covering bin x + (bin - 1) / 2), the same A about
        // (c - (bin - 1) / 2) / bin, moved by D / bin.
        const double h = (bin_ - 1) / 2.0;
        LinearTransform coarse = warp;
        coarse.dx /= bin_, coarse.dy /= bin_;
        coarse.cx = (warp.cx - h) / bin_, coarse.cy = (warp.cy - h) / bin_;
        coarse_->load_warped(slot, block_mean(frame, bin_), coarse, fill, load_options(false, false));
    }

    MiPeak search(int ref_slot, int mov_slot, const IntShift& centre) override {
        const auto [lattice_reach, step] = sharpness_lattice(setup_.search.max_shift);
        // A range under 8 px has every shift on its lattice: nothing to save.
        if (step.x == 1 && step.y == 1) return fine_->search(ref_slot, mov_slot, centre);
        const MiPeak lattice = fine_->search_near(ref_slot, mov_slot, centre, lattice_reach, centre, step);
        const IntShift coarse_at = search_coarse(ref_slot, mov_slot, centre);
        MiPeak peak = climb(ref_slot, mov_slot, centre, {coarse_at.x * bin_, coarse_at.y * bin_, centre.z});
        // Where the lattice's best lies beyond the climb's last reach, climb
        // from it too: on a weak pair the block means can lead to a lesser
        // peak of a broad ridge (the sample time-lapse's pair 11-12 ended
        // 2 px short of the exhaustive search's), and a climb is 25 shifts.
        const IntShift from{centre.x + lattice.dx, centre.y + lattice.dy, centre.z};
        if (std::abs(from.x - centre.x - peak.dx) > fine_reach_ || std::abs(from.y - centre.y - peak.dy) > fine_reach_) {
            const MiPeak other = climb(ref_slot, mov_slot, centre, from);
            const bool tie = std::fabs(other.mi - peak.mi) <= 1e-9 * std::max(1.0, std::fabs(peak.mi));
            if ((other.mi > peak.mi && !tie) || (tie && l1(other) < l1(peak))) peak = other;
        }
        peak.mean = lattice.mean;
        peak.stddev = lattice.stddev;
        return peak;
    }
    MiPeak search_near(int ref_slot, int mov_slot, const IntShift& centre, const ShiftRange& reach,
                       const IntShift& about, const ShiftStep& step) override {
        return fine_->search_near(ref_slot, mov_slot, centre, reach, about, step);
    }
    std::vector<MiPeak> search_windows(int ref_slot, int mov_slot, const std::vector<WindowCorner>& corners) override {
        return fine_->search_windows(ref_slot, mov_slot, corners);
    }
    ContinuousShift refine(int ref_slot, int mov_slot, const MiPeak& peak) override {
        return fine_->refine(ref_slot, mov_slot, peak);
    }
    ContinuousShift refine_window(int ref_slot, int mov_slot, const WindowCorner& corner, const MiPeak& peak) override {
        return fine_->refine_window(ref_slot, mov_slot, corner, peak);
    }
    const RefineFeatures* features(int slot) const override { return fine_->features(slot); }
    RefineParams refine_params_at(int ref_slot, int mov_slot, const WindowCorner& corner,
                                  const IntShift& centre) override {
        return fine_->refine_params_at(ref_slot, mov_slot, corner, centre);
    }
    std::unique_ptr<AffineStatistics> affine_statistics(int ref_slot, int mov_slot, const RefineParams& p,
                                                        const SampleGrid& grid) override {
        return fine_->affine_statistics(ref_slot, mov_slot, p, grid);
    }
    std::string describe() const override {
        return fine_->describe() + "; coarse to fine (" + std::to_string(bin_) + "x" + std::to_string(bin_) +
               " block means first)";
    }

private:
    static int l1(const MiPeak& p) { return std::abs(p.dx) + std::abs(p.dy); }
    // The full-resolution shifts within kFineReach of `from`, moved while
    // their best is on the reach's rim (and not on the range's): the peak
    // from `centre`, with the last reach's neighbours.
    MiPeak climb(int ref_slot, int mov_slot, const IntShift& centre, IntShift at) {
        const ShiftRange& m = setup_.search.max_shift;
        const ShiftRange reach{std::min(fine_reach_, m.x), std::min(fine_reach_, m.y), 0};
        MiPeak fine;
        for (int move = 0; move < kFineMoves; ++move) {
            const IntShift about{std::clamp(at.x, centre.x - m.x + reach.x, centre.x + m.x - reach.x),
                                 std::clamp(at.y, centre.y - m.y + reach.y, centre.y + m.y - reach.y), centre.z};
            fine = fine_->search_near(ref_slot, mov_slot, about, reach, centre);
            at = {about.x + fine.dx, about.y + fine.dy, centre.z};
            const bool rim_x = std::abs(fine.dx) == reach.x && std::abs(at.x - centre.x) < m.x;
            const bool rim_y = std::abs(fine.dy) == reach.y && std::abs(at.y - centre.y) < m.y;
            if (!rim_x && !rim_y) break;
        }
        fine.dx = at.x - centre.x, fine.dy = at.y - centre.y, fine.dz = 0;
        fine.centre = centre;
        return fine;
    }
    // The coarse range about centre / bin, as much of it as the coarse
    // frame holds there (a skip pair's centre can leave less room): its
    // peak's shift from 0, in coarse pixels.
    IntShift search_coarse(int ref_slot, int mov_slot, const IntShift& centre) {
        MiSearchParams p = coarse_setup_.search;
        p.centre = {nearest_multiple(centre.x, bin_), nearest_multiple(centre.y, bin_), 0};
        while (!window_overflow(p, coarse_width_, coarse_height_).empty() && (p.max_shift.x > 1 || p.max_shift.y > 1))
            p.max_shift.x = std::max(1, p.max_shift.x - 1), p.max_shift.y = std::max(1, p.max_shift.y - 1);
        if (!window_overflow(p, coarse_width_, coarse_height_).empty()) {
            p.centre = IntShift{};  // no room about the centre: the range about 0
            p.max_shift = coarse_setup_.search.max_shift;
        }
        const MiPeak peak = coarse_->search_near(ref_slot, mov_slot, p.centre, p.max_shift, p.centre);
        return {p.centre.x + peak.dx, p.centre.y + peak.dy, 0};
    }

    SearchSetup setup_, coarse_setup_;
    int bin_;
    int fine_reach_;  // kFineReach, or for larger blocks bin / 2 + 1: their peaks lie further from the fine one
    int coarse_width_, coarse_height_;
    std::unique_ptr<PairSearcher> fine_, coarse_;
};

}  // namespace

std::unique_ptr<PairSearcher> make_coarse_to_fine(const Device& device, const SearchSetup& setup,
                                                  SearcherPriority priority, int bin, int width, int height) {
    return std::make_unique<CoarseToFineSearcher>(device, setup, priority, bin, width, height);
}

std::unique_ptr<PairSearcher> make_pairs_searcher(const StackPlan& plan, const Device& device,
                                                  SearcherPriority priority) {
    return plan.coarse_bin() > 1
               ? make_coarse_to_fine(device, plan.setup, priority, plan.coarse_bin(), plan.width, plan.height)
               : make_pair_searcher(device, plan.setup, priority);
}

}  // namespace stackalign
