// The slab fit's views moved by per-view corrections (pipelines/stages/
// slab_views.hpp): each view's held pixels meaned over factor x factor
// boxes once, then every fit pixel one bilinear sample of those means.
// Both twins compute a pixel with moved_pixel below, so they give the same
// doubles. The GPU twin keeps the means on the GPU and writes the moved
// columns where its least squares reads them (least_squares_gpu.hpp): on
// the depth scan of a 121 x 512^2 slab the host's moves, their copies and
// their way over the bus were 0.2 s of the slab fit (H100, timers), and
// with the moves there the scan took 0.39-0.49 s against 0.40-0.59 (means
// 0.43 and 0.48 over ten runs; run.json's slab_fit.depth_scan_seconds on
// the zebrafish and wide slabs of `python3 bench/tilt_accuracy.py --size
// 512 --noise 1000`, CUDA, H100, the builds alternating; shifts.csv the
// same bytes).
#pragma once
#include <memory>
#include <vector>

#include "../../src/core/host_device.hpp"
#include "../backend.hpp"

namespace stackalign {

// Every view's box means on one grid: box (i, j) covers held pixels
// x0 + i .. x0 + i + factor - 1 across and y0 + j .. along.
struct BoxedViews {
    int views = 0, factor = 1;
    int x0 = 0, y0 = 0, width = 0, rows = 0;
    std::vector<double> means;  // views x rows x width
};

// The block each view is moved into: `width` x `rows` fit pixels whose
// first lies at held pixel (x0, y0) before the move.
struct MovedBlock {
    int width = 0, rows = 0;
    double x0 = 0, y0 = 0;
};

// Bilinear in one view's box means (`m`, `bw` x `bh`, first box at
// (bx0, by0)) at held pixel (x, y), clamped to the boxes: the mean of the
// held views' bilinear samples over the box from there.
STACKALIGN_HD inline double boxed_sample(const double* m, int bx0, int by0, int bw, int bh, double x, double y) {
    x = x - bx0, y = y - by0;
    x = x < 0.0 ? 0.0 : (x > double(bw - 1) ? double(bw - 1) : x);
    y = y < 0.0 ? 0.0 : (y > double(bh - 1) ? double(bh - 1) : y);
    const int i = int(x) < bw - 2 ? int(x) : bw - 2, j = int(y) < bh - 2 ? int(y) : bh - 2;
    const double fx = x - i, fy = y - j;
    const double* p = m + std::size_t(j) * bw + i;
    return (1 - fy) * ((1 - fx) * p[0] + fx * p[1]) + fy * ((1 - fx) * p[bw] + fx * p[bw + 1]);
}

// Fit pixel (i, j) of view `v` moved by (across, along) fit pixels: content
// from (i + across, j + along).
STACKALIGN_HD inline double moved_pixel(const double* means, int bx0, int by0, int bw, int bh, int factor,
                                        const MovedBlock& block, int v, int i, int j, double across, double along) {
    return boxed_sample(means + std::size_t(v) * bw * bh, bx0, by0, bw, bh, block.x0 + (i + across) * factor,
                        block.y0 + (j + along) * factor);
}

// Every view moved by across[s * views + v] and along[v], for each of
// `sets` sets in turn, column-major into `out`: (views * width) rows,
// rows * sets columns, set s's column j holding row j of every view
// (entry v * width + i). On the host's threads or a GPU.
void move_views(const BoxedViews& b, const MovedBlock& block, const std::vector<double>& across, int sets,
                const std::vector<double>& along, double* out, const Device& device);

namespace cpu {
void move_views(const BoxedViews& b, const MovedBlock& block, const double* across, int sets, const double* along,
                double* out);
}

namespace cuda {
// The box means kept on a GPU, moved into its memory.
class GpuBoxedViews {
public:
    virtual ~GpuBoxedViews() = default;
    // As move_views, `across` (sets x views) and `along` (views) on the
    // host, `out` on the GPU, the work queued on `stream` (a cudaStream_t).
    virtual void move(const double* across, int sets, const double* along, double* out, void* stream) const = 0;
    // The same into host memory: what the tests compare with the CPU twin.
    virtual void move_to_host(const double* across, int sets, const double* along, double* out) const = 0;
};
std::shared_ptr<const GpuBoxedViews> keep_boxed_views(const BoxedViews& b, const MovedBlock& block, int gpu);
}  // namespace cuda

}  // namespace stackalign
