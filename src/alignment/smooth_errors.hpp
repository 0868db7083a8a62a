// A thick slab's pairs err smoothly over the tilt (each pair follows the
// depths that carry its contrast, and the error adds up along the series;
// docs/tomography.md#accuracy-and-its-limits). Those errors are found here
// as a few smooth shapes of the offsets, by how consistent the views are
// with one slab (slab_consistency.hpp), and the object's depth and the
// slab's thickness that the consistency is measured in.
#pragma once
#include <Eigen/Dense>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "slab_consistency.hpp"

namespace stackalign {

// (views, k) shapes across the axis: tan t, then (t / t_max)^2 .. ^k, each
// less its least-squares fit of c + a cos t + b sin t (the object's place
// and the axis's, which no consistency tells), orthonormal, RMS 1; with
// `free_beyond_deg` > 0, then each view tilted further than that on its
// own (one more column a view, less its fit alike).
Eigen::MatrixXd across_error_shapes(const std::vector<double>& tilts_deg, int k, double free_beyond_deg = 0);
// (views, k) shapes along the axis: (t / t_max)^1 .. ^k less their mean,
// orthonormal, RMS 1.
Eigen::MatrixXd along_error_shapes(const std::vector<double>& tilts_deg, int k);

// The views moved by per-view corrections (across, along the axis, in the
// views' binned px), as (views * width) x rows data for SlabConsistency;
// with `slopes`, also their derivatives by each view's correction across
// and along (the same layout, each view's block its own).
struct MovedSlices {
    Eigen::MatrixXd data, d_across, d_along;
};
using MoveViews = std::function<MovedSlices(const std::vector<double>& across, const std::vector<double>& along, bool slopes)>;
// The same moves without slopes for `sets` sets of `across` in turn (sets x
// views; one `along` for all), written where a GPU's least squares reads
// them: MovedSlices::data of each set, one after another, at `columns` in
// that GPU's memory, the work queued on `stream` (a cudaStream_t).
using MoveViewsOnGpu = std::function<void(const std::vector<double>& across, int sets, const std::vector<double>& along,
                                          double* columns, void* stream)>;
// Moves made on a GPU and the layout they are written in there.
struct MovesOnGpu {
    MoveViewsOnGpu write;
    int column_length = 0;  // one column's values: views x width
    int set_columns = 0;    // one set's columns: the rows along the axis
    // Whether they are made at all, and for a slab of their views and width.
    bool serve(const SlabConsistency& slab) const {
        return write && column_length == slab.views() * slab.width();
    }
};
// The views' moves: on the host, and where they are held on a GPU, there
// too, so that the depth scan's columns never cross the bus.
struct ViewMoves {
    ViewMoves(MoveViews host_moves, MovesOnGpu gpu_moves = {})
        : host(std::move(host_moves)), on_gpu(std::move(gpu_moves)) {}
    MovedSlices operator()(const std::vector<double>& across, const std::vector<double>& along, bool slopes) const {
        return host(across, along, slopes);
    }
    MoveViews host;
    MovesOnGpu on_gpu;
};

// The residual's sum of squares for the views moved by each of `sets` sets
// of `across` in turn (sets x views; along the axis unmoved): the moves and
// the residual on the GPU where both the views and the slab's factors are
// there, else on the host.
std::vector<double> residual_sums(const SlabConsistency& slab, const ViewMoves& move, const std::vector<double>& across,
                                  int sets);

// Every view's move across the axis (binned px) that moves the object by
// -z in depth: z sin t, the object's own gauge.
std::vector<double> depth_move(const std::vector<double>& tilts_deg, double z);

// Where in depth the content lies against the support's middle (binned px):
// every view moved by z sin t, z over -span..span a px apart, then a
// quarter px about the best, a parabola through the least three. Given
// `near`, the whole px start there and go outwards only while the least
// lies on an end: one valley's floor, not the whole span's least.
double depth_by_consistency(const SlabConsistency& slab, const ViewMoves& move, const std::vector<double>& tilts_deg,
                            const std::vector<double>& across, double span, std::optional<double> near = std::nullopt);

// Which of the supports tried (depths, rising, and each one's residual
// with the content placed) holds the slab: the residual falls steeply
// until the support holds the content and then slowly, each deeper pixel
// adding freedom. The index of the thinnest whose residual lies within 5 %
// of the line through the deeper half's; kNoKnee where the residual still
// falls steeply past it, and a fit there would trade the offsets for depth;
// kNoFall where it falls too little before it to tell a slab's depth (the
// content is no deeper than the thinnest support, or noise hides it), and
// the thinnest support serves (depth_scan.hpp).
constexpr int kNoKnee = -1, kNoFall = -2;
int depth_knee(const std::vector<int>& depths, const std::vector<double>& residuals);

struct SmoothErrorFit {
    std::vector<double> across, along;  // per view, binned px: what the fit adds to the corrections given
    Eigen::VectorXd coefficients;       // the across shapes', then the along shapes'
    double residual_before = 0, residual_after = 0;  // sums of squares
};
// Gauss-Newton steps within the shapes from `across` / `along`: each step
// one linear least-squares fit of the shapes' coefficients to the
// residual's slopes. A step that does not lower the residual is halved, twice
// at most; then the fit ends.
// `free_beyond_deg` (> 0): the views tilted further each free across the
// axis beside the `shapes_across` shapes (across_error_shapes).
SmoothErrorFit fit_smooth_errors(const SlabConsistency& slab, const ViewMoves& move,
                                 const std::vector<double>& tilts_deg, const std::vector<double>& across,
                                 const std::vector<double>& along, int shapes_across, int k_along, int steps,
                                 double free_beyond_deg = 0);

}  // namespace stackalign
