#include "depth_scan.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <memory>
#include <optional>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../core/interrupt.hpp"

namespace stackalign {
namespace {

// Supports this many coarse px deep or more seek the content's place from
// the last depth's (choose_depth).
constexpr int kSeededFrom = 8;

// The scan's supports in the scan's order, each built by the time it is
// taken: at once where `ahead` is 0, else up to `ahead` of them before.
class SupportsAhead {
public:
    SupportsAhead(int width, const std::vector<int>& depths, const std::vector<double>& tilts,
                  const FactorLeastSquares& factor, int ahead)
        : width_(width), depths_(depths), tilts_(tilts), factor_(factor), ahead_(std::max(0, ahead)),
          pending_(depths.size()) {}

    std::unique_ptr<SlabConsistency> take(std::size_t k) {
        if (ahead_ == 0) return std::make_unique<SlabConsistency>(width_, depths_[k], tilts_, factor_);
        for (; launched_ < depths_.size() && launched_ <= k + std::size_t(ahead_); ++launched_) launch(launched_);
        return pending_[k].get();
    }

private:
    void launch(std::size_t k) {
        pending_[k] = std::async(std::launch::async, [this, k, threads = builder_threads()] {
#ifdef _OPENMP
            omp_set_num_threads(threads);  // this thread's own teams: the builds share the host
#endif
            return std::make_unique<SlabConsistency>(width_, depths_[k], tilts_, factor_);
        });
    }
    int builder_threads() const {
#ifdef _OPENMP
        return std::max(1, omp_get_max_threads() / (ahead_ + 1));
#else
        return 1;
#endif
    }

    int width_;
    const std::vector<int>& depths_;
    const std::vector<double>& tilts_;
    const FactorLeastSquares& factor_;
    int ahead_;
    std::size_t launched_ = 0;
    std::vector<std::future<std::unique_ptr<SlabConsistency>>> pending_;
};

}  // namespace

std::vector<int> depths_to_try(int deepest) {
    std::vector<int> d;
    for (int k = 2; k <= deepest; k = std::max(k + 1, int(std::lround(k * 1.15)))) d.push_back(k);
    return d;
}

DepthChoice choose_depth(const ViewMoves& move, int width, const std::vector<double>& tilts,
                         const FactorLeastSquares& factor, int ahead) {
    DepthChoice c;
    std::vector<double> places;
    const std::vector<double> zero(tilts.size(), 0.0);
    const std::vector<int> depths = depths_to_try(std::max(3, width / 2));
    SupportsAhead supports(width, depths, tilts, factor, ahead);
    for (std::size_t k = 0; k < depths.size(); ++k) {
        const int d = depths[k];
        const std::unique_ptr<SlabConsistency> slab = supports.take(k);
        // From kSeededFrom px on, the content's place is sought from the
        // last depth's outwards: a deep support's residual over its place is
        // one valley, and scanning its whole depth took most of the scan.
        const std::optional<double> near =
            d >= kSeededFrom && !places.empty() ? std::optional(places.back()) : std::nullopt;
        const double z = depth_by_consistency(*slab, move, tilts, zero, d / 2.0 + 1, near);
        c.tried.push_back(d);
        places.push_back(z);
        c.residuals.push_back(residual_sums(*slab, move, depth_move(tilts, z), 1)[0]);
        throw_if_interrupted();
    }
    const int k = depth_knee(c.tried, c.residuals);
    const int at = k == kNoFall ? 0 : k;
    c.depth = at < 0 ? 0 : c.tried[std::size_t(at)];
    c.place = places[std::size_t(std::max(at, 0))];
    c.chosen_by = k == kNoFall ? "thinnest" : k >= 0 ? "knee" : "";
    if (k == kNoKnee) c.why = "the residual still falls steeply past the depth the knee gives";
    return c;
}

}  // namespace stackalign
