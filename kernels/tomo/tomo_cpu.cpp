#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tomo.hpp"

namespace stackalign {

TomoGeometry tomo_geometry(int width, int rows, int thickness, const std::vector<double>& angles_deg,
                           const std::vector<bool>& used) {
    TomoGeometry g;
    g.width = width;
    g.rows = rows;
    g.thickness = thickness;
    g.views = int(angles_deg.size());
    std::vector<int> in;  // used views, in angle order
    for (int v = 0; v < g.views; ++v)
        if (used[v]) in.push_back(v);
    std::sort(in.begin(), in.end(), [&](int a, int b) { return angles_deg[a] < angles_deg[b]; });
    g.weight.assign(g.views, 0.0f);
    for (int k = 0; k < int(in.size()); ++k) {
        // Half the gap to either neighbour in angle; an end view counts its one gap twice.
        const double lo = k > 0 ? angles_deg[in[k - 1]] : NAN, hi = k + 1 < int(in.size()) ? angles_deg[in[k + 1]] : NAN;
        const double a = angles_deg[in[k]];
        double span = std::isnan(lo) ? hi - a : std::isnan(hi) ? a - lo : 0.5 * (hi - lo);
        if (!std::isfinite(span) || span <= 0) span = 1;  // a single view, or repeated angles
        g.weight[in[k]] = float(span * M_PI / 180.0);
    }
    for (double a : angles_deg) {
        g.cos_t.push_back(float(std::cos(a * M_PI / 180.0)));
        g.sin_t.push_back(float(std::sin(a * M_PI / 180.0)));
    }
    return g;
}

std::vector<float> ramp_taps(int width) {
    std::vector<float> h(std::max(width, 1));
    for (int k = 0; k < int(h.size()); ++k) h[k] = float(-2.0 / (M_PI * M_PI * (4.0 * k * k - 1.0)));
    return h;
}

int specimen_thickness(const std::vector<float>& volume, const TomoGeometry& g) {
    std::vector<double> energy(g.thickness, 0.0);
    for (int y = 0; y < g.rows; ++y)
        for (int z = 0; z < g.thickness; ++z)
            for (int x = 0; x < g.width; ++x) {
                const double v = volume[(std::size_t(y) * g.thickness + z) * g.width + x];
                energy[z] += v * v;
            }
    const double top = *std::max_element(energy.begin(), energy.end());
    const double cz = 0.5 * (g.thickness - 1);
    double reach = 0;
    int first = g.thickness, last = -1;  // the slices at half the peak or more
    for (int z = 0; z < g.thickness; ++z)
        if (energy[z] >= 0.5 * top) {
            reach = std::max(reach, std::fabs(z - cz) + 0.5);
            first = std::min(first, z), last = z;
        }
    // Layers apart from the main one: a slice beyond it with at least
    // kLayerShare of the peak and twice the least energy between them is
    // content at another depth, not the main layer's streaks falling off.
    // Two flat layers 0.75 of a 102-px box apart, the weaker at 0.37 of
    // the stronger: reconstructed as deep as the stronger alone, the weaker
    // one's content smeared into the reprojections and biased projection
    // matching's along-axis line by 0.10 px a radian (`python3
    // bench/tilt_accuracy.py --size 512 --cases slab-layers2 --noise 1000`).
    constexpr double kLayerShare = 0.25;
    for (int step : {-1, 1}) {
        double least = top;
        for (int z = step < 0 ? first - 1 : last + 1; z >= 0 && z < g.thickness; z += step) {
            least = std::min(least, energy[z]);
            if (energy[z] >= kLayerShare * top && energy[z] >= 2 * least) reach = std::max(reach, std::fabs(z - cz) + 0.5);
        }
    }
    const int t = 2 * int(std::ceil(1.5 * reach));
    return std::max(2, std::min(t, g.thickness));
}

namespace cpu {
namespace {

using Floats4 = float __attribute__((vector_size(16)));
Floats4 load4(const float* p) {
    Floats4 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// ramp_filtered_at for a whole row, 4 outputs at a time: lane l is output
// x0 + l, summed in ramp_filtered_at's order (four chains over j, then
// ((s0 + s1) + (s2 + s3)) x weight), so each is that function's value, bit
// for bit. `mirrored` holds taps[|k|] at k + width - 1, so the 4 lanes' taps
// for term j are contiguous. So the filter takes 0.06 s of a 2-core CPU
// round of matching on the 121 x 512^2 tilt job (binned 2); one output at
// a time, the job's matching took 25.5 s instead of 21.8.
void ramp_filtered_row(const float* row, int width, const float* taps, const float* mirrored, float weight,
                       float* out) {
    int x0 = 0;
    for (; x0 + 4 <= width; x0 += 4) {
        Floats4 s0 = {}, s1 = {}, s2 = {}, s3 = {};
        const float* base = mirrored + x0 + width - 1;  // base[l - j] = taps[|x0 + l - j|]
        int j = 0;
        for (; j + 3 < width; j += 4) {
            s0 += load4(base - j) * row[j];
            s1 += load4(base - j - 1) * row[j + 1];
            s2 += load4(base - j - 2) * row[j + 2];
            s3 += load4(base - j - 3) * row[j + 3];
        }
        for (; j < width; ++j) {
            const Floats4 term = load4(base - j) * row[j];
            if ((j & 3) == 0) s0 += term;
            else if ((j & 3) == 1) s1 += term;
            else s2 += term;
        }
        const Floats4 r = ((s0 + s1) + (s2 + s3)) * weight;
        std::memcpy(out + x0, &r, sizeof r);
    }
    for (; x0 < width; ++x0) out[x0] = ramp_filtered_at(row, width, taps, x0, weight);
}

}  // namespace

Reprojection reproject_leave_one_out(const std::vector<float>& views, const TomoGeometry& g, TomoOutputs keep) {
    const int nx = g.width, ny = g.rows, nv = g.views, nz = g.thickness;
    const std::vector<float> taps = ramp_taps(nx);
    std::vector<float> mirrored(2 * std::size_t(nx) - 1);
    for (int k = -(nx - 1); k <= nx - 1; ++k) mirrored[k + nx - 1] = taps[k < 0 ? -k : k];
    Reprojection r;
    r.filtered.assign(views.size(), 0.0f);
    r.volume.assign(g.volume_size(), 0.0f);
#pragma omp parallel for collapse(2) schedule(static)
    for (int v = 0; v < nv; ++v)
        for (int y = 0; y < ny; ++y) {
            const std::size_t row = (std::size_t(v) * ny + y) * nx;
            ramp_filtered_row(views.data() + row, nx, taps.data(), mirrored.data(), g.weight[v], &r.filtered[row]);
        }
#pragma omp parallel for collapse(2) schedule(static)
    for (int y = 0; y < ny; ++y)
        for (int z = 0; z < nz; ++z)
            for (int x = 0; x < nx; ++x)
                r.volume[(std::size_t(y) * nz + z) * nx + x] =
                    backprojected_at(r.filtered.data(), nx, ny, nv, nz, g.cos_t.data(), g.sin_t.data(), x, z, y);
    if (keep == TomoOutputs::volume) {
        r.filtered.clear();
        return r;
    }
    r.projections.assign(views.size(), 0.0f);
#pragma omp parallel for collapse(2) schedule(static)
    for (int v = 0; v < nv; ++v)
        for (int y = 0; y < ny; ++y)
            for (int u = 0; u < nx; ++u)
                r.projections[(std::size_t(v) * ny + y) * nx + u] = reprojected_at(
                    r.volume.data(), r.filtered.data(), nx, ny, nz, g.cos_t[v], g.sin_t[v], v, y, u);
    if (keep == TomoOutputs::projections) r.filtered.clear(), r.volume.clear();
    return r;
}

}  // namespace cpu
}  // namespace stackalign
