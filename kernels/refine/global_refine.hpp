// Global refinement of a landmark fit (`[landmarks] refine = "global"`):
// the rigid or affine transform maximising MI over the whole overlap of the
// two volumes, from the fit as the start (what CMTK and elastix do, and why
// they reach a few hundredths of a voxel where points matched one by one
// do not). The metric is the continuous refinement's (refine.hpp): Parzen
// MI of smoothed intensities, each binned by its own distribution, the
// moving volume interpolated with cubic B-splines, histograms in fixed
// point, so the CPU and CUDA twins score every transform identically and
// the search takes the same path on both.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "../../src/core/choices.hpp"
#include "../../src/alignment/landmark_fit.hpp"
#include "parzen.hpp"
#include "refine.hpp"

namespace stackalign {

// Reference voxel (x, y, z) -> moving voxel m * (x, y, z, 1), in voxels.
struct Affine3 {
    float m[3][4];
};

// Which reference voxels are scored: every `step`-th along each axis,
// `margin` voxels or more inside the volume (a regular subsample; the
// volumes are smoothed to sigma 1 voxel first, so nothing between samples
// is missed at step 2-3). Samples that land within `margin` of the moving
// volume's faces are left out too: smoothing mixes what lies beyond a face
// (repeated edge values, or the zeros a resampled volume was padded with)
// into the voxels near it, which pulled the refinement towards aligning the
// faces: on the zebrafish volume (41 slices) moved by fractional z shifts,
// margin 2 left z errors of +-0.06 voxel, margin 4 (the Gaussian's 3 sigma
// + the spline's 1 voxel) 0.01 (bench/landmark_peers.py).
//
// The grid covers the box of `width x height x depth` voxels at `origin`
// (the whole reference volume, or a stack pair's window). A 2D frame is a
// volume of depth 1: its one plane is sampled, with no margin in z.
struct SampleGrid {
    int width = 0, height = 0, depth = 0, step = 1, margin = 0;
    int origin[3] = {0, 0, 0};
    STACKALIGN_HD static int along(int extent, int step, int margin) {
        return extent - 2 * margin > 0 ? (extent - 2 * margin + step - 1) / step : 0;
    }
    STACKALIGN_HD int nx() const { return along(width, step, margin); }
    STACKALIGN_HD int ny() const { return along(height, step, margin); }
    STACKALIGN_HD int nz() const { return depth == 1 ? 1 : along(depth, step, margin); }
    STACKALIGN_HD long long count() const { return (long long)(nx()) * ny() * nz(); }
    // The k-th sample along each axis.
    STACKALIGN_HD int x(int k) const { return origin[0] + margin + k * step; }
    STACKALIGN_HD int y(int k) const { return origin[1] + margin + k * step; }
    STACKALIGN_HD int z(int k) const { return depth == 1 ? origin[2] : origin[2] + margin + k * step; }
    // Sample i of all count(), x fastest.
    STACKALIGN_HD void sample(long long i, int& sx, int& sy, int& sz) const {
        const int n = nx(), m = ny();
        const long long row = i / n;
        sx = x(int(i % n)), sy = y(int(row % m)), sz = z(int(row / m));
    }
};

// The moving value at reference voxel (x, y, z) under `t`; false when it
// falls outside the moving volume less `margin` (that voxel is left out of
// the histogram: the overlap only). One text for both twins.
STACKALIGN_HD inline bool affine_sample(const float* coefficients, const RefineImage& g, const Affine3& t, int x, int y,
                                        int z, int margin, float& value) {
    const float fx = float(x), fy = float(y), fz = float(z), m = float(margin);
    float q[3];
    for (int r = 0; r < 3; ++r) q[r] = t.m[r][0] * fx + t.m[r][1] * fy + t.m[r][2] * fz + t.m[r][3];
    if (!(q[0] >= m && q[0] <= float(g.width - 1) - m && q[1] >= m && q[1] <= float(g.height - 1) - m &&
          (g.depth == 1 || (q[2] >= m && q[2] <= float(g.depth - 1) - m))))
        return false;
    ShiftTaps taps;
    for (int a = 0; a < 3; ++a) {
        const float f = floorf(q[a]);
        taps.base[a] = int(f);
        bspline_weights(q[a] - f, taps.w[a]);
    }
    value = interpolate(coefficients, g, 0, 0, 0, taps);
    return true;
}

// Fixed-point statistics of the sampled pairs, statistics_size(p) per
// transform, transform-major: Parzen histograms (bins x bins, row =
// reference bin), or NCC's pixel moments. Made once per pair of volumes (the
// GPU twin uploads them once) and called for each batch of the search below.
class AffineStatistics {
public:
    virtual ~AffineStatistics() = default;
    virtual std::vector<std::uint64_t> operator()(const std::vector<Affine3>& transforms) = 0;
};
std::unique_ptr<AffineStatistics> make_affine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                                         const RefineParams& p, const SampleGrid& grid,
                                                         const Device& device);

struct GlobalRefineResult {
    Matrix34 m{};
    double mi_start = 0, mi_end = 0;   // MI of the start and of the answer
    int batches = 0, evaluations = 0;
};

// Maximises MI over a rigid (6 parameters: a small rotation about the
// reference volume's centre as `start` maps it, and a translation, composed
// onto `start`) or affine (12)
// change of `start`, by a deterministic pattern search: every parameter
// tried at +-step in one batch, the best kept while it improves, then the
// steps halved, from 1 voxel (and the angle or shear moving the volume's
// corners by about 1 voxel) to 1/64. `voxel` is the voxel size of both
// volumes (start is in its units); `statistics` scores voxel-space transforms.
GlobalRefineResult refine_transform(const Matrix34& start, bool rigid, const std::array<double, 3>& voxel,
                                    const std::array<int, 3>& ref_size, const RefineParams& p,
                                    AffineStatistics& statistics);

namespace cpu {
std::unique_ptr<AffineStatistics> make_affine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                                         const RefineParams& p, const SampleGrid& grid);
}
namespace cuda {
std::unique_ptr<AffineStatistics> make_affine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                                         const RefineParams& p, const SampleGrid& grid, int gpu = 0);
}

}  // namespace stackalign
