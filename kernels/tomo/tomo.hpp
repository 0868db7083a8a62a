// Single-axis tomography for projection matching: filtered (weighted)
// back-projection of a tilt series into a stack of slices, and the
// reprojection of that volume at each view's angle with the view's own
// contribution taken out (so a view is never matched to itself).
//
// Geometry: the views are already aligned and turned so the tilt axis is
// the image y axis, binned. Each image row y is then one slice's projection:
// the slice (x, z) seen at tilt t puts the point (x, z) at detector position
//   u = (x - cx) cos t + (z - cz) sin t + cx,   cx = (nx - 1) / 2, cz = (nz - 1) / 2.
// Rows are independent, so every kernel runs over (view or z, row, x).
//
// Every value is computed by one __host__ __device__ function below that
// both twins call in the same order, with no FMA contraction (the Makefile's
// -ffp-contract=off / -fmad=false) and cos/sin made once on the host: the
// CPU and CUDA twins give bit-identical filtered views, volumes and
// reprojections.
#pragma once
#include <cmath>
#include <cstddef>
#include <vector>

#include "../backend.hpp"
#include "../mi_search/mi_search.hpp"  // STACKALIGN_HD

namespace stackalign {

// A series of `views` images of `width` x `rows` floats, view-major; or a
// volume of `rows` slices of `width` x `thickness`, row-major (x fastest,
// then z, then the row).
struct TomoGeometry {
    int width = 0, rows = 0, views = 0, thickness = 0;
    std::vector<float> cos_t, sin_t;  // per view
    std::vector<float> weight;        // per view: its share of the angular range (radians); 0 leaves it out
    std::size_t view_size() const { return std::size_t(width) * rows; }
    std::size_t volume_size() const { return std::size_t(width) * thickness * rows; }
};
// The geometry of views at `angles_deg` (weights from the angular spacing,
// half a neighbour gap at either end; `used[k]` false: weight 0).
TomoGeometry tomo_geometry(int width, int rows, int thickness, const std::vector<double>& angles_deg,
                           const std::vector<bool>& used);

// The Shepp-Logan ramp filter's taps h(k), k = 0 .. width - 1 (symmetric):
// h(k) = -2 / (pi^2 (4k^2 - 1)). Spatial, so both twins convolve the same
// finite kernel over the zero-padded row.
std::vector<float> ramp_taps(int width);

// Summed as four chains (terms j, j + 4, ... in each) added at the end:
// the same order on either twin, and four independent additions at a time
// instead of each waiting for the last. On 2 cores the CPU's rounds of the
// 121 x 512^2 tilt job's matching reconstructed in 2.3-2.6 s instead of
// 2.9-3.4 (`build/bench stages tilt`'s config with projection_matching).
STACKALIGN_HD inline float ramp_filtered_at(const float* row, int width, const float* taps, int x, float weight) {
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    int j = 0;
    for (; j + 3 < width; j += 4) {
        const int k = x - j;  // taps of k, k - 1, k - 2, k - 3
        s0 += taps[k < 0 ? -k : k] * row[j];
        s1 += taps[k - 1 < 0 ? 1 - k : k - 1] * row[j + 1];
        s2 += taps[k - 2 < 0 ? 2 - k : k - 2] * row[j + 2];
        s3 += taps[k - 3 < 0 ? 3 - k : k - 3] * row[j + 3];
    }
    for (; j < width; ++j) {
        const int k = x - j;
        const float term = taps[k < 0 ? -k : k] * row[j];
        if ((j & 3) == 0) s0 += term;
        else if ((j & 3) == 1) s1 += term;
        else s2 += term;
    }
    return ((s0 + s1) + (s2 + s3)) * weight;
}

// Linear interpolation of a row of n samples at position s, 0 outside.
STACKALIGN_HD inline float row_sample(const float* row, int n, float s) {
    if (!(s > -1.0f && s < float(n))) return 0.0f;
    const float f = floorf(s);
    const int i = int(f);
    const float t = s - f;
    const float a = i >= 0 ? row[i] : 0.0f;
    const float b = i + 1 < n ? row[i + 1] : 0.0f;
    return a + t * (b - a);
}

// Where slice point (x, z) falls on the detector of a view.
STACKALIGN_HD inline float detector_position(int x, int z, float cx, float cz, float c, float s) {
    return (float(x) - cx) * c + (float(z) - cz) * s + cx;
}

// One voxel of the back-projection: the filtered rows of every view summed
// at the voxel's detector position. `filtered` is views x rows x width.
STACKALIGN_HD inline float backprojected_at(const float* filtered, int width, int rows, int views, int thickness,
                                            const float* cos_t, const float* sin_t, int x, int z, int y) {
    const float cx = 0.5f * float(width - 1), cz = 0.5f * float(thickness - 1);
    float sum = 0.0f;
    for (int v = 0; v < views; ++v) {
        const float* row = filtered + (std::size_t(v) * rows + y) * width;
        sum += row_sample(row, width, detector_position(x, z, cx, cz, cos_t[v], sin_t[v]));
    }
    return sum;
}

// The volume at slice point (x, z) of row y less view v's own share of it
// (its filtered row back-projected there): the leave-one-out volume.
STACKALIGN_HD inline float volume_without_view(const float* volume, const float* own_row, int width, int thickness,
                                               int y, int x, int z, float cx, float cz, float c, float s) {
    if (x < 0 || x >= width || z < 0 || z >= thickness) return 0.0f;
    const float all = volume[(std::size_t(y) * thickness + z) * width + x];
    return all - row_sample(own_row, width, detector_position(x, z, cx, cz, c, s));
}

// One detector sample of view v's leave-one-out reprojection: the line
// integral through the volume of row y along the view's rays, stepping one
// voxel along whichever of z or x the ray crosses faster, linear between
// the two voxels it passes between, times the step's length.
STACKALIGN_HD inline float reprojected_at(const float* volume, const float* filtered, int width, int rows,
                                          int thickness, float c, float s, int v, int y, int u) {
    const float cx = 0.5f * float(width - 1), cz = 0.5f * float(thickness - 1);
    const float* own = filtered + (std::size_t(v) * rows + y) * width;
    const float d = float(u) - cx;
    const float ac = c < 0.0f ? -c : c, as = s < 0.0f ? -s : s;
    float sum = 0.0f;
    if (ac >= as) {
        for (int z = 0; z < thickness; ++z) {
            const float x = (d - (float(z) - cz) * s) / c + cx;
            const float f = floorf(x);
            const int i = int(f);
            const float t = x - f;
            const float a = volume_without_view(volume, own, width, thickness, y, i, z, cx, cz, c, s);
            const float b = volume_without_view(volume, own, width, thickness, y, i + 1, z, cx, cz, c, s);
            sum += a + t * (b - a);
        }
        return sum / ac;
    }
    // Only the columns whose ray point lies within a voxel and a half of
    // the slab: beyond, both voxels are outside it and the term is +0, which
    // leaves the sum as it is. A slab seen beyond 45 degrees crosses a few
    // of its `width` columns, and stepping through all of them was most of a
    // CPU round of matching (1.7 of 2.1 s on 2 cores, the 121 x 512^2 tilt
    // job binned 2).
    int x_first = 0, x_last = width - 1;
    if (ac > 1e-6f) {
        // zf = (d - (x - cx) c) / s + cz is monotonic in x: where it is -2 and thickness + 1.
        const float xa = (d - (-2.0f - cz) * s) / c + cx, xb = (d - (float(thickness) + 1.0f - cz) * s) / c + cx;
        const float lo = xa < xb ? xa : xb, hi = xa < xb ? xb : xa;
        if (lo > float(width) || hi < -1.0f) return 0.0f;
        x_first = lo > 1.0f ? int(lo) - 1 : 0;
        x_last = hi < float(width - 2) ? int(hi) + 1 : width - 1;
    }
    for (int x = x_first; x <= x_last; ++x) {
        const float zf = (d - (float(x) - cx) * c) / s + cz;
        const float f = floorf(zf);
        const int i = int(f);
        const float t = zf - f;
        const float a = volume_without_view(volume, own, width, thickness, y, x, i, cx, cz, c, s);
        const float b = volume_without_view(volume, own, width, thickness, y, x, i + 1, cx, cz, c, s);
        sum += a + t * (b - a);
    }
    return sum / as;
}

// The three steps, each views/volume in the layouts above; what the caller
// did not ask for is left empty (on the GPU, never copied back).
struct Reprojection {
    std::vector<float> filtered;      // views x rows x width: ramp-filtered, weighted views
    std::vector<float> volume;        // rows x thickness x width
    std::vector<float> projections;   // views x rows x width: leave-one-out reprojections
};
// What a caller keeps: the volume alone (filter and back-project only: the
// "auto" thickness), the reprojections alone (a round of matching), or all.
enum class TomoOutputs { volume, projections, all };
// `views`: views x rows x width, each already levelled (mean 0, tapered).
// Views of weight 0 add nothing to the volume; their reprojection is the
// whole volume's.
Reprojection reproject_leave_one_out(const std::vector<float>& views, const TomoGeometry& g, const Device& device,
                                     TomoOutputs keep = TomoOutputs::all);

// The thickness (in the volume's pixels, even, centred on the volume's
// middle) that holds the specimen: 1.5 x the z range, symmetric about the
// centre, whose slices carry at least half the largest slice energy (sum of
// squares). Limited-angle streaks spread a slab's energy far beyond it (a
// 41-px slab seen over +-60 degrees: a tenth of the peak 60 px from its
// middle), and a slab reconstructed deeper than it is gives reprojections
// that carry them: matched against, they made offsets worse. A layer apart
// from the main one (a quarter of its energy or more, twice the least
// between them) is held too.
int specimen_thickness(const std::vector<float>& volume, const TomoGeometry& g);

namespace cpu {
Reprojection reproject_leave_one_out(const std::vector<float>& views, const TomoGeometry& g,
                                     TomoOutputs keep = TomoOutputs::all);
}
namespace cuda {
Reprojection reproject_leave_one_out(const std::vector<float>& views, const TomoGeometry& g, int gpu,
                                     TomoOutputs keep = TomoOutputs::all);
}

}  // namespace stackalign
