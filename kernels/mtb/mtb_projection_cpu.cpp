#include "mtb_projection.hpp"

#include <cmath>

#include "../../src/core/error.hpp"
#include "../preprocess/preprocess.hpp"

namespace stackalign {

double profile_ncc(const std::int32_t* a, const std::int32_t* b, int n) {
    long long sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    for (int i = 0; i < n; ++i) {
        sa += a[i];
        sb += b[i];
        saa += (long long)(a[i]) * a[i];
        sbb += (long long)(b[i]) * b[i];
        sab += (long long)(a[i]) * b[i];
    }
    const double N = n, cov = N * double(sab) - double(sa) * double(sb);
    const double va = N * double(saa) - double(sa) * double(sa), vb = N * double(sbb) - double(sb) * double(sb);
    return (va > 0 && vb > 0) ? cov / std::sqrt(va * vb) : 0.0;
}

namespace {
// Score of each shift along one axis: white and black profile NCCs averaged.
std::vector<double> axis_scores(const std::vector<std::int32_t>& ref_white, const std::vector<std::int32_t>& ref_black,
                                const std::vector<std::int32_t>& mov_white, const std::vector<std::int32_t>& mov_black,
                                int length, int max_shift) {
    std::vector<double> s(2 * max_shift + 1);
    for (int d = -max_shift; d <= max_shift; ++d) {
        const int r = max_shift, m = max_shift + d;
        s[d + max_shift] = (profile_ncc(&ref_white[r], &mov_white[m], length) +
                            profile_ncc(&ref_black[r], &mov_black[m], length)) / 2;
    }
    return s;
}
}  // namespace

std::vector<double> mtb_map(const MtbProjections& ref, const MtbProjections& mov, const MtbParams& p) {
    const SearchWindow& w = p.window;
    const ShiftRange& m = p.max_shift;
    const std::vector<double> x = axis_scores(ref.col_white, ref.col_black, mov.col_white, mov.col_black, w.width, m.x);
    const std::vector<double> y = axis_scores(ref.row_white, ref.row_black, mov.row_white, mov.row_black, w.height, m.y);
    std::vector<double> map;
    map.reserve(x.size() * y.size());
    for (double sy : y)
        for (double sx : x) map.push_back((sx + sy) / 2);
    return map;
}

MiPeak mtb_search(const MtbProjections& ref, const MtbProjections& mov, const MtbParams& p) {
    return peak_from_map(mtb_map(ref, mov, p), p.max_shift);
}

namespace cpu {

std::vector<std::uint32_t> brightness_histogram(const ImageF& normalised) {
    std::vector<std::uint32_t> h(kBrightnessLevels, 0);
    for (float v : normalised.pixels) ++h[brightness_level(v)];
    return h;
}

MtbProjections mtb_projections(const RawFrame& frame, const MtbParams& p) {
    if (frame.depth > 1) throw UnsupportedError("mtb-projection aligns 2D frames, not volumes");
    check_window_fits(MiSearchParams{0, Metric::mi, 1, p.window, p.max_shift, {}, {}}, frame.width, frame.height);
    const ImageF v = normalise(frame);
    MtbProjections out;
    out.levels = mtb_thresholds(brightness_histogram(v).data(), p.band);
    const int lo = out.levels.lo, hi = out.levels.hi;
    const SearchWindow& w = p.window;
    const ShiftRange& m = p.max_shift;
    auto count = [&](int x0, int y0, int width, int height, std::vector<std::int32_t>* col_w,
                     std::vector<std::int32_t>* col_b, std::vector<std::int32_t>* row_w, std::vector<std::int32_t>* row_b) {
        if (col_w) col_w->assign(width, 0), col_b->assign(width, 0);
        if (row_w) row_w->assign(height, 0), row_b->assign(height, 0);
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x) {
                const int level = brightness_level(v.at(x0 + x, y0 + y));
                const bool white = level > hi, black = level < lo;
                if (col_w) (*col_w)[x] += white, (*col_b)[x] += black;
                if (row_w) (*row_w)[y] += white, (*row_b)[y] += black;
            }
    };
    count(w.x - m.x, w.y, w.width + 2 * m.x, w.height, &out.col_white, &out.col_black, nullptr, nullptr);
    count(w.x, w.y - m.y, w.width, w.height + 2 * m.y, nullptr, nullptr, &out.row_white, &out.row_black);
    return out;
}

}  // namespace cpu
}  // namespace stackalign
