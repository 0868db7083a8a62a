// The GPU twin of patch_tracks_cpu.cpp. The band-pass and the clear mask
// are one thread per pixel, each value computed as the CPU computes it;
// each (patch, direction) is one block, whose threads make a step's
// samples and its row totals side by side while one thread adds the rows
// in the CPU's order and decides, so the tracks are the CPU's bit for bit.
#include <cmath>

#include "../../src/alignment/band_pass.hpp"
#include "../cuda_common.cuh"
#include "patch_tracks.hpp"
#include "track_steps.hpp"

namespace stackalign::cuda {
namespace {
using namespace tracks;

constexpr int kThreads = 256;
constexpr int kRows = kPatch;  // row totals per window

int blocks_for(long long n) { return int((n + kThreads - 1) / kThreads); }

// ---- the views as the tracks see them ----

// Each view's mean over its data, summed in pixel order (one thread a view).
__global__ void view_means(const float* __restrict__ in, long long size, int views, float* __restrict__ mean) {
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= views) return;
    const float* p = in + v * size;
    double sum = 0;
    long count = 0;
    for (long long i = 0; i < size; ++i)
        if (!isnan(p[i])) sum += p[i], ++count;
    mean[v] = float(count ? sum / count : 0.0);
}

__global__ void filled(const float* __restrict__ in, const float* __restrict__ mean, long long size, long long n,
                       float* __restrict__ out) {
    const long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = isnan(in[i]) ? mean[i / size] : in[i];
}

// band_pass.cpp's blurred, rows then columns, one output each.
__global__ void blur_rows(const float* __restrict__ in, int w, long long n, const float* __restrict__ k, int r,
                          float* __restrict__ out) {
    const long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int x = int(i % w);
    const float* row = in + (i - x);
    float o = 0.0f;
    for (int t = 0; t <= 2 * r; ++t) {
        const int c = min(max(x + t - r, 0), w - 1);
        o += k[t] * row[c];
    }
    out[i] = o;
}
__global__ void blur_columns(const float* __restrict__ in, int w, int h, long long n, const float* __restrict__ k,
                             int r, float* __restrict__ out) {
    const long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int x = int(i % w);
    const int y = int((i / w) % h);
    const float* view = in + (i - x - (long long)(y) * w);
    float o = 0.0f;
    for (int t = -r; t <= r; ++t) o += k[t + r] * view[(long long)(min(max(y + t, 0), h - 1)) * w + x];
    out[i] = o;
}
__global__ void difference(float* __restrict__ a, const float* __restrict__ b, long long n) {
    const long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) a[i] -= b[i];
}

// Clear: no missing pixel within kClear, by rows then columns.
__global__ void clear_rows(const float* __restrict__ in, int w, long long n, unsigned char* __restrict__ rows) {
    const long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int x = int(i % w);
    const float* row = in + (i - x);
    bool c = true;
    for (int j = max(0, x - kClear); j <= min(w - 1, x + kClear) && c; ++j) c = !isnan(row[j]);
    rows[i] = c && x >= kClear && x < w - kClear;
}
__global__ void clear_columns(const unsigned char* __restrict__ rows, int w, int h, long long n,
                              unsigned char* __restrict__ clear) {
    const long long i = (long long)(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int x = int(i % w);
    const int y = int((i / w) % h);
    const unsigned char* view = rows + (i - x - (long long)(y) * w);
    bool c = y >= kClear && y < h - kClear;
    for (int j = y - kClear; j <= y + kClear && c; ++j) c = view[(long long)(j) * w + x];
    clear[i] = c;
}

// ---- one block a (patch, direction) ----

struct Block {
    float t[kArea], tx[kArea], ty[kArea];  // the template
    float samples[kWide * kWide];          // the wide sampling, or a patch's
    double rows[kPlaces * kRows * 2];      // row totals
    double mean[kPlaces], score[kPlaces];
    double l[16];
    double x, y, bx, by;
    bool ok, settled;
};

// The block's threads sample a side x side patch (and its slopes).
__device__ void sample_patch(const TrackView& v, double cx, double cy, double k, int side, float* f, float* gx,
                             float* gy) {
    const RowPhase p = row_phase(cy, side);
    for (int q = threadIdx.x; q < side * side; q += blockDim.x) {
        const int j = q / side, i = q % side;
        const ColumnPhase c = column_phase(cx, k, i, side);
        patch_sample(v, p, c, j, &f[q], gx ? &gx[q] : nullptr, gy ? &gy[q] : nullptr);
    }
    __syncthreads();
}

// The correlations of the template with `places` windows of the block's
// samples (row stride `stride`; window w at its top-left `corner(w)`), into
// b.score.
__device__ void correlations(Block& b, int stride, int places) {
    auto corner = [&](int w) { return (w / (2 * kSearch + 1)) * stride + w % (2 * kSearch + 1); };
    for (int q = threadIdx.x; q < places * kRows; q += blockDim.x)
        b.rows[q] = row_total(b.samples + corner(q / kRows), stride, q % kRows);
    __syncthreads();
    if (threadIdx.x < places) {
        double s = 0;
        for (int j = 0; j < kRows; ++j) s += b.rows[threadIdx.x * kRows + j];
        b.mean[threadIdx.x] = s / kArea;
    }
    __syncthreads();
    for (int q = threadIdx.x; q < places * kRows; q += blockDim.x)
        correlation_row(b.t, b.samples + corner(q / kRows), stride, q % kRows, b.mean[q / kRows], &b.rows[2 * q],
                        &b.rows[2 * q + 1]);
    __syncthreads();
    if (threadIdx.x < places) {
        double ss = 0, st = 0;
        for (int j = 0; j < kRows; ++j) ss += b.rows[2 * (threadIdx.x * kRows + j)], st += b.rows[2 * (threadIdx.x * kRows + j) + 1];
        b.score[threadIdx.x] = correlation_of(ss, st);
    }
    __syncthreads();
}

// make_template of the CPU twin, into b.t / b.tx / b.ty / b.l; b.ok false where the patch is flat.
__device__ void make_template(Block& b, const TrackView& v, double cx, double cy) {
    sample_patch(v, cx, cy, 1.0, kPatch, b.t, b.tx, b.ty);
    if (threadIdx.x < kRows) b.rows[threadIdx.x] = row_total(b.t, kPatch, threadIdx.x);
    __syncthreads();
    if (threadIdx.x == 0) {
        double s = 0;
        for (int j = 0; j < kRows; ++j) s += b.rows[j];
        b.mean[0] = s / kArea;
    }
    __syncthreads();
    if (threadIdx.x < kRows) b.rows[threadIdx.x] = centred_squares(b.t, threadIdx.x, b.mean[0]);
    __syncthreads();
    if (threadIdx.x == 0) {
        double ss = 0;
        for (int j = 0; j < kRows; ++j) ss += b.rows[j];
        b.ok = ss > 1e-20;
        b.score[0] = b.ok ? 1 / sqrt(ss) : 0.0;  // the template's scale
    }
    __syncthreads();
    if (!b.ok) return;
    const double m = b.mean[0], n = b.score[0];
    for (int q = threadIdx.x; q < kArea; q += blockDim.x) normalise(b.t, b.tx, b.ty, q, m, n);
    __syncthreads();
    if (threadIdx.x < kRows) normal_row(b.t, b.tx, b.ty, threadIdx.x, &b.rows[16 * threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) {
        double h[16] = {0};
        for (int j = 0; j < kRows; ++j)
            for (int e = 0; e < 16; ++e) h[e] += b.rows[16 * j + e];
        b.ok = cholesky4(h, b.l);
    }
    __syncthreads();
}

// locate of the CPU twin: b.x, b.y in, the place found out; b.ok false where lost.
__device__ void locate(Block& b, const TrackView& v, double k) {
    if (threadIdx.x == 0) b.ok = patch_fits(v, b.x, b.y, k, kWide);
    __syncthreads();
    if (!b.ok) return;
    sample_patch(v, b.x, b.y, k, kWide, b.samples, nullptr, nullptr);
    correlations(b, kWide, kPlaces);
    if (threadIdx.x == 0) {
        double best = -2, bx = b.x, by = b.y;
        for (int w = 0; w < kPlaces; ++w)
            if (b.score[w] > best) best = b.score[w], bx = b.x + (w % (2 * kSearch + 1) - kSearch), by = b.y + (w / (2 * kSearch + 1) - kSearch);
        b.bx = b.x = bx, b.by = b.y = by;
    }
    __syncthreads();
    for (int step = 0; step < kNewtonSteps; ++step) {
        if (threadIdx.x == 0) b.ok = patch_fits(v, b.x, b.y, k, kPatch);
        __syncthreads();
        if (!b.ok) return;
        sample_patch(v, b.x, b.y, k, kPatch, b.samples, nullptr, nullptr);
        if (threadIdx.x < kRows) step_row(b.t, b.tx, b.ty, b.samples, threadIdx.x, &b.rows[4 * threadIdx.x]);
        __syncthreads();
        if (threadIdx.x == 0) {
            double r[4] = {0, 0, 0, 0}, s[4], ddx = 0, ddy = 0;
            for (int j = 0; j < kRows; ++j)
                for (int e = 0; e < 4; ++e) r[e] += b.rows[4 * j + e];
            solve4(b.l, r, s);
            b.ok = newton_move(s, k, &ddx, &ddy);
            b.x += ddx, b.y += ddy;
            b.settled = settled(ddx, ddy);
        }
        __syncthreads();
        const bool ok = b.ok, done = b.settled;
        __syncthreads();  // read by every thread before thread 0 writes b.ok again (compute-sanitizer racecheck)
        if (!ok) return;
        if (done) break;
    }
    if (threadIdx.x == 0) b.ok = !too_far(b.x - b.bx, b.y - b.by) && patch_fits(v, b.x, b.y, k, kPatch);
    __syncthreads();
    if (!b.ok) return;
    sample_patch(v, b.x, b.y, k, kPatch, b.samples, nullptr, nullptr);
    correlations(b, kPatch, 1);
    if (threadIdx.x == 0) b.ok = !(b.score[0] < kMinCorrelation);
    __syncthreads();
}

__global__ void track_kernel(const float* __restrict__ band, const unsigned char* __restrict__ clear, int w, int h,
                             int n, const double* __restrict__ cosines, int reference, bool slab,
                             const double* __restrict__ starts, double* __restrict__ xs, double* __restrict__ ys) {
    __shared__ Block b;
    const int patch = blockIdx.x / 2, dir = blockIdx.x % 2 ? -1 : 1;
    const long long size = (long long)(w) * h;
    double* x = xs + (long long)(patch) * n;
    double* y = ys + (long long)(patch) * n;
    double px = starts[2 * patch], py = starts[2 * patch + 1];
    int prev = reference;
    for (int i = reference + dir; i >= 0 && i < n; i += dir) {
        const TrackView p{w, h, band + prev * size, clear + prev * size};
        if (threadIdx.x == 0) b.ok = patch_fits(p, px, py, 1.0, kPatch);
        __syncthreads();
        if (!b.ok) return;
        make_template(b, p, px, py);
        if (!b.ok) return;
        const double k = slab ? cosines[i] / cosines[prev] : 1.0;
        if (threadIdx.x == 0) b.x = predicted_x(px, k, w), b.y = py;
        __syncthreads();
        locate(b, TrackView{w, h, band + i * size, clear + i * size}, k);
        if (!b.ok) return;
        px = b.x, py = b.y;
        if (threadIdx.x == 0) x[i] = px, y[i] = py;
        prev = i;
        __syncthreads();  // b.x / b.y are read above before the next view's thread 0 writes them
    }
}

}  // namespace

PatchTracks track_patches(const std::vector<ImageF>& in, const std::vector<double>& tilts, int reference, bool slab,
                          int gpu) {
    const int n = int(in.size());
    PatchTracks out;
    out.patch_px = kPatch;
    if (n == 0) return out;
    const int w = in.front().width, h = in.front().height;
    out.width = w, out.height = h;
    const long long size = (long long)(w) * h, all = size * n;
    select_device(gpu);
    Stream s;
    DeviceBuffer<float> d_in(all), d_filled(all), d_tmp(all), d_band(all), d_wide(all), d_mean(n), d_taps(64);
    DeviceBuffer<unsigned char> d_rows(all), d_clear(all);
    // Each view from where it lies: gathering them into one host block first
    // (127 MB, first touched) took 80-190 ms of the 121 x 512^2 series' tracks
    // (H200 hosts), where the upload, band-pass and tracking take 58 ms.
    for (int v = 0; v < n; ++v)
        CUDA_CHECK(cudaMemcpyAsync(d_in.get() + v * size, in[v].pixels.data(), size * sizeof(float),
                                   cudaMemcpyHostToDevice, s));
    view_means<<<blocks_for(n), kThreads, 0, s>>>(d_in.get(), size, n, d_mean.get());
    filled<<<blocks_for(all), kThreads, 0, s>>>(d_in.get(), d_mean.get(), size, all, d_filled.get());
    CUDA_CHECK_LAUNCH("patch tracks: view means");
    // The band, as the CPU twin's band_pass makes it.
    float taps[2][64];
    const int r[2] = {gaussian_taps(kBandFine, taps[0]), gaussian_taps(kBandCoarse, taps[1])};
    for (int pass = 0; pass < 2; ++pass) {
        CUDA_CHECK(cudaMemcpyAsync(d_taps.get(), taps[pass], sizeof taps[pass], cudaMemcpyHostToDevice, s));
        blur_rows<<<blocks_for(all), kThreads, 0, s>>>(d_filled.get(), w, all, d_taps.get(), r[pass], d_tmp.get());
        blur_columns<<<blocks_for(all), kThreads, 0, s>>>(d_tmp.get(), w, h, all, d_taps.get(), r[pass],
                                                          pass == 0 ? d_band.get() : d_wide.get());
        CUDA_CHECK_LAUNCH("patch tracks: band-pass");
    }
    difference<<<blocks_for(all), kThreads, 0, s>>>(d_band.get(), d_wide.get(), all);
    clear_rows<<<blocks_for(all), kThreads, 0, s>>>(d_in.get(), w, all, d_rows.get());
    clear_columns<<<blocks_for(all), kThreads, 0, s>>>(d_rows.get(), w, h, all, d_clear.get());
    CUDA_CHECK_LAUNCH("patch tracks: clear");

    const auto starts = track_starts(w, h);
    const int patches = int(starts.size());
    std::vector<double> start_xy(2 * std::size_t(patches));
    for (int p = 0; p < patches; ++p) start_xy[2 * p] = starts[p].first, start_xy[2 * p + 1] = starts[p].second;
    const std::vector<double> cosines = track_cosines(tilts);
    DeviceBuffer<double> d_cos(n), d_starts(std::max(1, 2 * patches)), d_x(std::max(1, patches * n)),
        d_y(std::max(1, patches * n));
    CUDA_CHECK(cudaMemcpyAsync(d_cos.get(), cosines.data(), n * sizeof(double), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(d_starts.get(), start_xy.data(), start_xy.size() * sizeof(double),
                               cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemsetAsync(d_x.get(), 0xff, std::size_t(patches) * n * sizeof(double), s));  // NaN: lost
    CUDA_CHECK(cudaMemsetAsync(d_y.get(), 0xff, std::size_t(patches) * n * sizeof(double), s));
    if (patches > 0) {
        track_kernel<<<2 * patches, kThreads, 0, s>>>(d_band.get(), d_clear.get(), w, h, n, d_cos.get(), reference,
                                                      slab, d_starts.get(), d_x.get(), d_y.get());
        CUDA_CHECK_LAUNCH("patch tracks");
    }
    std::vector<double> xs(std::size_t(patches) * n), ys(xs.size());
    CUDA_CHECK(cudaMemcpyAsync(xs.data(), d_x.get(), xs.size() * sizeof(double), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(ys.data(), d_y.get(), ys.size() * sizeof(double), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    out.x.resize(patches), out.y.resize(patches);
    for (int p = 0; p < patches; ++p) {
        out.x[p].assign(xs.begin() + std::size_t(p) * n, xs.begin() + std::size_t(p + 1) * n);
        out.y[p].assign(ys.begin() + std::size_t(p) * n, ys.begin() + std::size_t(p + 1) * n);
        out.x[p][reference] = starts[p].first, out.y[p][reference] = starts[p].second;
    }
    return out;
}

}  // namespace stackalign::cuda
