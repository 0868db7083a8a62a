// The stretched-view correlations the tilt axis's and offset's first
// estimates are made of (kernels/view_correlation): what a score means on a
// real frame, and the CUDA twin's scores and estimates against the CPU's.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "../kernels/view_correlation/view_correlation.hpp"
#include "../src/alignment/apply.hpp"
#include "../src/alignment/band_pass.hpp"
#include "../src/alignment/tilt_axis.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {
constexpr int kSide = 128;

// The real embryo frame foreshortened by cos(tilt) across an axis
// `axis_deg` from y, moved by (dx, dy), its central kSide^2.
ImageF slab_view(double axis_deg, double tilt_deg, double dx = 0, double dy = 0) {
    const RawFrame& frame = sample_frame("sample_data/drosophila_embryo_13x512x512.tif", 8);
    const double a = axis_deg * M_PI / 180, px = std::cos(a), py = std::sin(a), k = std::cos(tilt_deg * M_PI / 180);
    const LinearTransform squeeze{1 + (k - 1) * px * px, (k - 1) * px * py, (k - 1) * px * py, 1 + (k - 1) * py * py,
                                  dx, dy, 255.5, 255.5};
    return crop(transform_frame(frame, squeeze, frame.mean()), 256 - kSide / 2, 256 - kSide / 2, kSide, kSide)
        .to_float();
}

MakeViewCorrelator on(const Device& device) {
    return [device](const std::vector<std::vector<float>>& views, int w, int h, int lag) {
        return make_view_correlator(views, w, h, lag, device);
    };
}
}  // namespace

TEST_CASE("view correlation: a view scores 1 with itself, less moved beyond the lags, most stretched about the true axis") {
    const std::vector<std::vector<float>> views = {
        band_pass(slab_view(20, 0)), band_pass(slab_view(20, 0, 2.5, -1.5)), band_pass(slab_view(20, 0, 20, 0)),
        band_pass(slab_view(20, 50))};
    auto c = make_view_correlator(views, kSide, kSide, 6, Device{});
    std::vector<StretchedPair> pairs = {{0, 0, {}}, {1, 0, {}}, {2, 0, {}}};
    // View 3 (tilted 50 degrees about an axis 20 degrees from y) stretched
    // into view 0's foreshortening about candidate axes.
    for (double axis : {20.0, 14.0, 26.0, 110.0}) pairs.push_back({3, 0, cosine_stretch(0, 50, axis)});
    const std::vector<double> s = c->correlate(pairs);
    MESSAGE("itself " << s[0] << ", moved (2.5, -1.5) " << s[1] << ", moved 20 px " << s[2] << "; stretched about 20 "
                      << s[3] << ", 14 " << s[4] << ", 26 " << s[5] << ", 110 " << s[6]);
    CHECK(s[0] == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(s[1] > 0.8);
    CHECK(s[2] < 0.5 * s[1]);
    CHECK(s[3] > 0.8);
    CHECK(s[3] > s[4] + 0.05);
    CHECK(s[3] > s[5] + 0.05);
    CHECK(s[3] > s[6] + 0.3);
}

namespace {
// `v` in 2 x 2 block means.
ImageF halved(const ImageF& v) {
    ImageF h(v.width / 2, v.height / 2);
    for (int y = 0; y < h.height; ++y)
        for (int x = 0; x < h.width; ++x)
            h.at(x, y) = 0.25f * (v.at(2 * x, 2 * y) + v.at(2 * x + 1, 2 * y) + v.at(2 * x, 2 * y + 1) +
                                  v.at(2 * x + 1, 2 * y + 1));
    return h;
}

// A flat slab's series whose stage is off by `offset_deg`, given the nominal tilts.
std::vector<ImageF> offset_series(const std::vector<double>& tilts, double offset_deg) {
    std::vector<ImageF> series;
    for (std::size_t i = 0; i < tilts.size(); ++i)
        series.push_back(slab_view(84, tilts[i] + offset_deg, 0.3 * (i % 5) - 0.6, 0.2 * (i % 3)));
    return series;
}
}  // namespace

TEST_CASE("view correlation: a flat slab's tilt offset found on binned views is kept when taken on to finer ones") {
    std::vector<double> tilts;
    for (int i = 0; i < 21; ++i) tilts.push_back(-60 + 6 * i);
    const std::vector<ImageF> finer = offset_series(tilts, 3);
    std::vector<ImageF> coarse;
    for (const ImageF& v : finer) coarse.push_back(halved(v));
    const TiltOffsetEstimate alone = estimate_tilt_offset(coarse, tilts, 10, 3, 84, on(Device{}));
    const TiltOffsetEstimate on_finer = estimate_tilt_offset(coarse, tilts, 10, 3, 84, on(Device{}), finer, 6);
    MESSAGE("binned: " << alone.offset_deg << " +- " << alone.standard_error << "; taken on to the finer views: "
                       << on_finer.offset_deg << " +- " << on_finer.standard_error);
    CHECK(std::fabs(alone.offset_deg - 3) < 0.2);
    CHECK(std::fabs(on_finer.offset_deg - 3) < 0.2);
    CHECK_FALSE(on_finer.at_edge);
    CHECK(on_finer.offset_deg != alone.offset_deg);  // the finer pass made its own estimate
}

TEST_CASE("view correlation: the CUDA twin's scores are the CPU's to 1e-12, and its estimates the same angles") {
    if (skip_without_gpu()) return;
    std::vector<ImageF> series;
    std::vector<double> tilts;
    for (int i = 0; i < 21; ++i) {
        tilts.push_back(-60 + 6 * i);
        series.push_back(slab_view(84, tilts.back(), 0.3 * (i % 5) - 0.6, 0.2 * (i % 3)));
    }
    std::vector<std::vector<float>> views;
    for (const ImageF& v : series) views.push_back(band_pass(v));
    // More pairs than the GPU's batch (256), so batches and their short end are compared.
    std::vector<StretchedPair> pairs;
    for (int k = 0; k < 300; ++k) {
        const int view = k % 21, to = (k * 7 + 3) % 21;
        pairs.push_back({view, to, cosine_stretch(tilts[to], tilts[view], -90 + 0.6 * k)});
    }
    pairs.push_back({4, 4, {}});
    const std::vector<double> a = make_view_correlator(views, kSide, kSide, 6, Device{})->correlate(pairs);
    const std::vector<double> b =
        make_view_correlator(views, kSide, kSide, 6, Device{Backend::cuda, 0})->correlate(pairs);
    REQUIRE(a.size() == b.size());
    double worst = 0;
    for (std::size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::fabs(a[k] - b[k]));
    MESSAGE(a.size() << " pairs: the largest difference " << worst);
    CHECK(worst < 1e-12);

    const TiltAxisEstimate ca = estimate_tilt_axis(series, tilts, 10, 6, true, on(Device{}));
    const TiltAxisEstimate ga = estimate_tilt_axis(series, tilts, 10, 6, true, on(Device{Backend::cuda, 0}));
    MESSAGE("axis: CPU " << ca.axis_deg << " +- " << ca.standard_error << ", CUDA " << ga.axis_deg << " +- "
                         << ga.standard_error);
    CHECK(ca.axis_deg == ga.axis_deg);
    CHECK(ca.standard_error == ga.standard_error);
    CHECK(std::fabs(ca.axis_deg - 84) < 0.3);
    const TiltOffsetEstimate co = estimate_tilt_offset(series, tilts, 10, 6, ca.axis_deg, on(Device{}));
    const TiltOffsetEstimate go = estimate_tilt_offset(series, tilts, 10, 6, ca.axis_deg, on(Device{Backend::cuda, 0}));
    MESSAGE("offset: CPU " << co.offset_deg << " +- " << co.standard_error << ", CUDA " << go.offset_deg << " +- "
                           << go.standard_error);
    CHECK(co.offset_deg == go.offset_deg);
    CHECK(co.standard_error == go.standard_error);
    // Taken on to finer views (the defaults' second pass).
    std::vector<ImageF> coarse;
    for (const ImageF& v : series) coarse.push_back(halved(v));
    const TiltOffsetEstimate cf = estimate_tilt_offset(coarse, tilts, 10, 3, ca.axis_deg, on(Device{}), series, 6);
    const TiltOffsetEstimate gf =
        estimate_tilt_offset(coarse, tilts, 10, 3, ca.axis_deg, on(Device{Backend::cuda, 0}), series, 6);
    CHECK(cf.offset_deg == gf.offset_deg);
    CHECK(cf.standard_error == gf.standard_error);
}
