// The CPU twin of the refinement's statistics: a batch of shifts' Parzen
// histograms (or NCC's moments), in fixed point, so they equal the CUDA
// twin's (refine_cuda.cu) word for word.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "feature_filters.hpp"
#include "pair_moments.hpp"
#include "parzen.hpp"
#include "refine.hpp"

namespace stackalign {

namespace {

// Row `yy` of plane `zz` of the moving coefficients (each clamped to the
// image) interpolated along x at the window's n columns: line[x] is
// interpolate()'s innermost sum for column first_col + 1 + x. `inside`: no
// column needs clamping.
inline void interpolate_line(const ImageF& c, int zz, int yy, int first_col, bool inside, int n, const float wx[4],
                             float* __restrict line) {
    const float* row_in = &c.pixels[(std::size_t(clamp_index(zz, c.depth)) * c.height + clamp_index(yy, c.height)) * c.width];
    if (inside) {
        const float* from = row_in + first_col;
        for (int x = 0; x < n; ++x) {
            float v = 0.0f;
            for (int i = 0; i < 4; ++i) v += from[x + i] * wx[i];
            line[x] = v;
        }
        return;
    }
    for (int x = 0; x < n; ++x) {
        float v = 0.0f;
        for (int i = 0; i < 4; ++i) v += row_in[clamp_index(first_col + x + i, c.width)] * wx[i];
        line[x] = v;
    }
}

// out[x] = sum over j of l[j][x] * w[j], added from 0 in that order:
// interpolate()'s sums across rows (a plane) and across planes (a volume).
inline void combine_lines(const float* const l[4], const float w[4], int n, float* __restrict out) {
    for (int x = 0; x < n; ++x) {
        float v = 0.0f;
        for (int j = 0; j < 4; ++j) v += l[j][x] * w[j];
        out[x] = v;
    }
}

// Calls row(y, z, b) for every row (y, z) of the window, b[i] the moving
// value at (w.x + i, y, z) at one shift, the interpolation done separably:
// each moving row is interpolated along x once and reused by the four output
// rows that need it, and in a volume each plane of those, interpolated along
// y, by the four output planes that need it. The same float operations, in
// the same order, as interpolate() (the GPU twin's), so the statistics are
// identical; 8 multiply-adds per pixel instead of 16, and in a volume about
// 12 instead of 64 (the 3D refinement, voxel by voxel, was a quarter of a
// 15-megavoxel landmark job).
template <typename Row>
void for_each_moved_row(const RefineFeatures& mov, const SearchWindow& w, const ShiftTaps& t, Row&& row) {
    const ImageF& c = mov.coefficients;
    const int n = w.width, h = w.height;
    const bool volume = c.depth > 1;
    // Columns w.x + t.base[0] - 1 .. + 2 + w.width - 1 inside the image: no clamping.
    const int first_col = w.x + t.base[0] - 1;
    const bool inside = first_col >= 0 && first_col + n + 2 < c.width;
    std::vector<float> moved(n);
    if (!volume) {
        // Rows first_row .. first_row + 3 of the moving image, interpolated
        // along x, held in lines[row % 4] as the window's rows go down.
        std::vector<float> lines(4 * std::size_t(n));
        auto line = [&](int yy) { return lines.data() + std::size_t((yy % 4 + 4) % 4) * n; };
        int cached_from = -(1 << 30);  // the first unclamped moving row held
        for (int y = w.y; y < w.y + h; ++y) {
            const int first_row = y + t.base[1] - 1;
            for (int yy = std::max(first_row, cached_from + 4); yy < first_row + 4; ++yy)
                interpolate_line(c, 0, yy, first_col, inside, n, t.w[0], line(yy));
            cached_from = first_row;
            const float* l[4] = {line(first_row), line(first_row + 1), line(first_row + 2), line(first_row + 3)};
            combine_lines(l, t.w[1], n, moved.data());
            row(y, w.z, moved.data());
        }
        return;
    }
    // Planes first_plane .. first_plane + 3 of the moving volume over the
    // window's rows, interpolated along x and y, held in planes[plane % 4]
    // as the window's planes go deeper.
    std::vector<float> lines(std::size_t(h + 3) * n), planes(4 * std::size_t(h) * n);
    auto plane = [&](int zz) { return planes.data() + std::size_t((zz % 4 + 4) % 4) * h * n; };
    int cached_from = -(1 << 30);  // the first unclamped moving plane held
    for (int z = w.z; z < w.z + w.depth; ++z) {
        const int first_plane = z + t.base[2] - 1;
        for (int zz = std::max(first_plane, cached_from + 4); zz < first_plane + 4; ++zz) {
            for (int q = 0; q < h + 3; ++q)
                interpolate_line(c, zz, w.y + t.base[1] - 1 + q, first_col, inside, n, t.w[0], lines.data() + std::size_t(q) * n);
            float* to = plane(zz);
            for (int y = 0; y < h; ++y) {
                const float* l[4];
                for (int j = 0; j < 4; ++j) l[j] = lines.data() + std::size_t(y + j) * n;
                combine_lines(l, t.w[1], n, to + std::size_t(y) * n);
            }
        }
        cached_from = first_plane;
        for (int y = 0; y < h; ++y) {
            const float* l[4];
            for (int k = 0; k < 4; ++k) l[k] = plane(first_plane + k) + std::size_t(y) * n;
            combine_lines(l, t.w[2], n, moved.data());
            row(w.y + y, z, moved.data());
        }
    }
}

// Four lanes of parzen_weight's operations (the same ones, lane by lane)
// and of the histogram's words: a row of a pixel's 4 x 4 cells at once.
using Floats4 = float __attribute__((vector_size(16)));
using Ints4 = std::int32_t __attribute__((vector_size(16)));
using Units4 = std::uint32_t __attribute__((vector_size(16)));

// Values' Parzen places (parzen_place): each one's first bin, and its four
// weights side by side, as the histogram's pass reads them (one load a
// value, where four arrays took four loads and three shuffles: 15 % of the
// refinement's samples).
struct ParzenPlaces {
    std::vector<int> bin;
    std::vector<Floats4> w;
    void resize(std::size_t n) {
        bin.resize(n);
        w.resize(n);
    }
};

// Room for a batch's n reference places: the calling thread's own buffer,
// kept from batch to batch up to kKeptPlaces values (20 MB), else `own`.
// Why kept: a fresh buffer's zeroing and page faults ran on the thread
// that leads the batch while the others waited, 3 % of that thread's
// samples in the X-ray-sized job on 2 threads (3 batches a pair).
constexpr std::size_t kKeptPlaces = std::size_t(1) << 20;
ParzenPlaces& places_buffer(std::size_t n, ParzenPlaces& own) {
    thread_local ParzenPlaces kept;
    ParzenPlaces& room = n <= kKeptPlaces ? kept : own;
    room.resize(n);  // zeroes only what it adds, every value is overwritten
    return room;
}

// parzen_place of n values into bin[0..n) and w[0..n), four values at a
// time: the same operations in the same order, lane by lane (the weights
// by bspline_weights itself; IEEE division and truncation round each lane
// as the scalar ones do), so the same places. Why by hand: the compiler
// kept the loop scalar, four divisions by 6 a value.
void place_row(const float* __restrict v, int n, float lo, float scale, int bins, int* __restrict bin,
               Floats4* __restrict w) {
    const Floats4 low = {2.0f, 2.0f, 2.0f, 2.0f};
    const float top_value = parzen_top(bins);
    const Floats4 top = {top_value, top_value, top_value, top_value};
    int x = 0;
    for (; x + 4 <= n; x += 4) {
        Floats4 value;
        std::memcpy(&value, v + x, sizeof value);
        Floats4 t = (value - lo) * scale + 2.0f;
        t = t < low ? low : t;
        t = t > top ? top : t;
        const Ints4 i = __builtin_convertvector(t, Ints4);
        Floats4 f[4];  // lane k of f[j]: value x + k's weight j
        bspline_weights(t - __builtin_convertvector(i, Floats4), f);
        const Ints4 first = i - 1;
        std::memcpy(bin + x, &first, sizeof first);
        // Transposed: w[x + k] = value x + k's four weights.
        const Floats4 lo01 = __builtin_shuffle(f[0], f[1], Ints4{0, 4, 1, 5}), lo23 = __builtin_shuffle(f[2], f[3], Ints4{0, 4, 1, 5});
        const Floats4 hi01 = __builtin_shuffle(f[0], f[1], Ints4{2, 6, 3, 7}), hi23 = __builtin_shuffle(f[2], f[3], Ints4{2, 6, 3, 7});
        w[x] = __builtin_shuffle(lo01, lo23, Ints4{0, 1, 4, 5});
        w[x + 1] = __builtin_shuffle(lo01, lo23, Ints4{2, 3, 6, 7});
        w[x + 2] = __builtin_shuffle(hi01, hi23, Ints4{0, 1, 4, 5});
        w[x + 3] = __builtin_shuffle(hi01, hi23, Ints4{2, 3, 6, 7});
    }
    for (; x < n; ++x) {
        float f[4];
        bin[x] = parzen_place(v[x], lo, scale, bins, f);
        w[x] = Floats4{f[0], f[1], f[2], f[3]};
    }
}

// map_level of n values, four at a time: the same operations lane by lane,
// the knots read one lane at a time (no gathers on the baseline ISA). Why:
// left scalar, it was a fifth of an intensity refinement's samples.
void map_level_row(const float* __restrict b, int n, const LevelMap& m, float* __restrict out) {
    const float top_value = kLevelTop;
    const Floats4 zero = {0.0f, 0.0f, 0.0f, 0.0f}, top = {top_value, top_value, top_value, top_value};
    int x = 0;
    for (; x + 4 <= n; x += 4) {
        Floats4 value;
        std::memcpy(&value, b + x, sizeof value);
        Floats4 t = (value - m.lo) * m.scale;
        t = t < zero ? zero : t;
        t = t > top ? top : t;
        const Ints4 i = __builtin_convertvector(t, Ints4);
        const Floats4 below = {m.knots[i[0]], m.knots[i[1]], m.knots[i[2]], m.knots[i[3]]};
        const Floats4 above = {m.knots[i[0] + 1], m.knots[i[1] + 1], m.knots[i[2] + 1], m.knots[i[3] + 1]};
        const Floats4 mapped = below + (t - __builtin_convertvector(i, Floats4)) * (above - below);
        std::memcpy(out + x, &mapped, sizeof mapped);
    }
    for (; x < n; ++x) out[x] = map_level(b[x], m, m.knots);
}

// A shift's Parzen histogram over the rows of `w` (2D or 3D; a band of
// `whole`, the window `placed` was made for), a row at a time in two
// passes: the moving values' places (on vector units), then per pixel its
// 16 weights, four lanes at a time, each lane added to its cell of the
// pixel's 4 x 4 block row. The same float operations per pixel as
// parzen_add_placed (the GPU twin's), so the same words. Why lanes: the
// block's 16 scalar read-modify-writes, from a pass of their own, were the
// refinement's largest cost (the drift job's refinement on 2 cores 3.8 ->
// 2.0 s, the same shifts.csv).
//
// The lanes add into 32-bit words, emptied into `h`'s 64-bit ones once
// they hold kParzenFlushPixels pixels: a cell takes at most one weight a pixel, and
// a weight is at most (2/3)^2 of kWeightScale (7.5e6), so 570 of them fit
// below 2^32. Integer sums in any grouping are the same words; half the
// width is half the vector work per weight and half the cache lines.
constexpr int kParzenFlushPixels = 570;
// Words between the two sets (below): the same cell of each is then not
// 4 KB apart, where a load can be taken to depend on a store to the other.
constexpr std::size_t kParzenSetGap = 16;
static_assert(double(kParzenFlushPixels) * (4.0 / 9.0 * kWeightScale + 1.0) < 4294967295.0,
              "32-bit Parzen words could wrap between flushes");

void parzen_rows(const RefineFeatures& mov, const SearchWindow& w, const SearchWindow& whole, const ShiftTaps& t,
                 const RefineParams& p, const ParzenPlaces& placed, std::uint64_t* h) {
    const int n = w.width, bins = p.bins;
    const float lo = p.mov_lo, scale = p.mov_scale;
    std::vector<float> v(n);
    ParzenPlaces moving;
    moving.resize(n);
    // Two sets of words, taken in turn pixel by pixel: neighbouring pixels
    // mostly fall in overlapping cells, and a pixel's read of cells its
    // neighbour had just written waited for that write (the X-ray-sized
    // job's refinement on 2 threads of the H100 host 7 % faster). Each set
    // takes every other pixel, so each is emptied every 2 x
    // kParzenFlushPixels pixels.
    const std::size_t cell_count = std::size_t(bins) * bins, second = cell_count + kParzenSetGap;
    std::vector<std::uint32_t> words(second + cell_count, 0);
    std::uint32_t* const cells = words.data();
    int since_flush = 0;
    auto flush = [&] {
        for (std::size_t k = 0; k < cell_count; ++k) h[k] += std::uint64_t(cells[k]) + cells[second + k];
        std::fill(words.begin(), words.end(), 0u);
        since_flush = 0;
    };
    for_each_moved_row(mov, w, t, [&](int y, int z, const float* b) {
        if (p.mov_levels.on)
            map_level_row(b, n, p.mov_levels, v.data());
        else
            std::copy(b, b + n, v.begin());
        place_row(v.data(), n, lo, scale, bins, moving.bin.data(), moving.w.data());
        const std::size_t row = (std::size_t(z - whole.z) * whole.height + (y - whole.y)) * n;
        const int* ref_bin = placed.bin.data() + row;
        const Floats4* ref_w = placed.w.data() + row;
        for (int x = 0; x < n; ++x) {
            if (since_flush == 2 * kParzenFlushPixels) flush();
            std::uint32_t* cell = cells + (since_flush & 1) * second + ref_bin[x] * bins + moving.bin[x];
            ++since_flush;
            const Floats4 b = moving.w[x], a = ref_w[x];
            for (int i = 0; i < 4; ++i) {
                const Floats4 w = (Floats4{a[i], a[i], a[i], a[i]} * b) * float(kWeightScale) + 0.5f;
                const Units4 add = __builtin_convertvector(__builtin_convertvector(w, Ints4), Units4);
                Units4 sum;
                std::memcpy(&sum, cell + i * bins, sizeof sum);
                sum += add;
                std::memcpy(cell + i * bins, &sum, sizeof sum);
            }
        }
    });
    flush();
}

// Calls pair(i, y, z, b) for every pixel or voxel of the window: b the
// moving value at (w.x + i, y, z).
template <typename Pair>
void for_each_moved(const RefineFeatures& mov, const SearchWindow& w, const ShiftTaps& t, Pair&& pair) {
    for_each_moved_row(mov, w, t, [&](int y, int z, const float* b) {
        for (int x = 0; x < w.width; ++x) pair(x, y, z, b[x]);
    });
}

// Rows [c/parts, (c+1)/parts) of a 2D window: a shift's statistics are
// integer sums, so they may be made in parts and added in any order.
SearchWindow window_part(const SearchWindow& w, int c, int parts) {
    SearchWindow part = w;
    part.y = w.y + int((long long)(w.height) * c / parts);
    part.height = w.y + int((long long)(w.height) * (c + 1) / parts) - part.y;
    return part;
}

// How many bands of rows each shift's 2D window is cut into, so that a
// batch's n x parts tasks, each summing its own statistics, keep every
// thread busy to the end: the fewest parts whose tasks, shared out whole,
// finish soonest. Why: a level's 9 shifts as 9 whole tasks take 5 rounds
// on 2 threads where 4.5 would do, and 3 on a 4-thread searcher where
// 2.25 would.
// A band is at least kMinBandRows rows and kMinBandPixels pixels: each
// task also clears, empties and adds its 32 x 32 words, so bands of a
// small window cost more than they balance (the HAADF sample's 2-thread
// refinement 0.067-0.080 s -> 0.097-0.13 with bands of 16 rows, H100 host).
constexpr int kMinBandRows = 16;
constexpr long long kMinBandPixels = 4096;
int window_parts(int n, int threads, int width, int height) {
    const int most = int(std::max(1LL, std::min<long long>(height / kMinBandRows, (long long)(width) * height / kMinBandPixels)));
    n = std::max(n, 1);
    threads = std::max(threads, 1);
    auto rounds = [&](int parts) { return (n * parts + threads - 1) / threads; };  // tasks a thread runs, at most
    int best = 1;
    for (int parts = 2; parts <= most && parts <= threads; ++parts)
        if ((long long)(rounds(parts)) * best < (long long)(rounds(best)) * parts) best = parts;  // finishes sooner
    return best;
}

}  // namespace

std::vector<std::uint64_t> cpu::refine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                                  const RefineParams& p, const std::vector<ContinuousShift>& shifts) {
    const std::size_t size = statistics_size(p);
    const int n = int(shifts.size());
    const SearchWindow& w = p.window;
    const bool volume = mov.coefficients.depth > 1;
    const int parts = volume ? 1 : window_parts(n, omp_get_max_threads(), w.width, w.height);
    const int tasks = n * parts;
    std::vector<std::uint64_t> out(std::size_t(n) * size, 0);
    std::vector<std::uint64_t> task_sums(parts > 1 ? std::size_t(tasks) * size : 0, 0);
    auto sums_of = [&](int task) {
        return parts > 1 ? task_sums.data() + std::size_t(task) * size : out.data() + std::size_t(task) * size;
    };
    if (p.metric == Metric::ncc) {
        // The reference's values, once for the batch (reference_value per pixel on the GPU).
        const RefineImage rg{ref.coefficients.width, ref.coefficients.height, ref.coefficients.depth};
        std::vector<float> a(std::size_t(w.width) * w.height * w.depth);
#pragma omp parallel for schedule(static)
        for (int row = 0; row < w.height * w.depth; ++row)
            for (int x = 0; x < w.width; ++x)
                a[std::size_t(row) * w.width + x] =
                    reference_value(ref.coefficients.pixels.data(), rg, w.x + x, w.y + row % w.height, w.z + row / w.height);
        auto at = [&](int i, int y, int z) { return a[(std::size_t(z - w.z) * w.height + (y - w.y)) * w.width + i]; };
#pragma omp parallel for schedule(dynamic, 1)
        for (int task = 0; task < tasks; ++task) {
            PairMoments m;
            for_each_moved(mov, window_part(w, task % parts, parts), shift_taps(shifts[task / parts]),
                           [&](int i, int y, int z, float b) { m.add(at(i, y, z), b); });
            std::uint64_t* sums = sums_of(task);
            for (int k = 0; k < kMomentCount; ++k) sums[k] = static_cast<std::uint64_t>(m.m[k]);
        }
    } else {
        // The reference's places are the same at every shift: made once for the batch.
        ParzenPlaces own;
        ParzenPlaces& placed = places_buffer(std::size_t(w.width) * w.height * w.depth, own);
#pragma omp parallel for schedule(static)
        for (int row = 0; row < w.height * w.depth; ++row) {
            const std::size_t i = std::size_t(row) * w.width;
            place_row(&ref.smooth.at(w.x, w.y + row % w.height, w.z + row / w.height), w.width, p.ref_lo, p.ref_scale,
                      p.bins, &placed.bin[i], &placed.w[i]);
        }
        // One task per thread at a time: its histogram (8 KB) stays in L1,
        // where a row-parallel loop over all of a batch's shifts scattered
        // into 25 of them and ran 1.5x slower (sample time-lapse, 2 cores).
#pragma omp parallel for schedule(dynamic, 1)
        for (int task = 0; task < tasks; ++task)
            parzen_rows(mov, window_part(w, task % parts, parts), w, shift_taps(shifts[task / parts]), p, placed,
                        sums_of(task));
    }
    // Unsigned sums wrap as the signed moments would: the same words.
    if (parts > 1) {
#pragma omp parallel for schedule(static)
        for (long long c = 0; c < (long long)(out.size()); ++c) {
            const std::uint64_t* band = task_sums.data() + std::size_t(c) / size * parts * size + std::size_t(c) % size;
            for (int part = 0; part < parts; ++part) out[c] += band[std::size_t(part) * size];
        }
    }
    return out;
}

}  // namespace stackalign
