// The MI score (kernels/mi_search/mi_score.cpp) from a joint histogram:
// against a direct double-precision formula, its properties, and the
// histogram's count of every window pixel.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>

#include "../kernels/mi_search/mi_search.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

// MI straight from the definition, sum p(a,b) log(p(a,b) / (p(a) p(b))).
double direct_mi(const std::vector<int>& a, const std::vector<int>& b) {
    std::map<std::pair<int, int>, double> pab;
    std::map<int, double> pa, pb;
    const double n = double(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        pab[{a[i], b[i]}] += 1 / n;
        pa[a[i]] += 1 / n;
        pb[b[i]] += 1 / n;
    }
    double mi = 0;
    for (const auto& [k, p] : pab) mi += p * std::log(p / (pa[k.first] * pb[k.second]));
    return mi;
}

double mi_of(const std::vector<int>& a, const std::vector<int>& b, int bins) {
    MiSearchParams p;
    p.bins = bins;
    p.window = {0, 0, 0, int(a.size()), 1, 1};
    std::vector<std::uint32_t> h(bins * bins);
    cpu::joint_histogram(bins_from(a, int(a.size())), bins_from(b, int(b.size())), p, 0, 0, 0, h.data());
    return mi_from_histogram(h.data(), bins, nlogn_table(p.window_pixels()));
}

}  // namespace

TEST_CASE("mi: histogram MI equals the direct double-precision formula") {
    std::mt19937 rng(1);
    for (int trial = 0; trial < 20; ++trial) {
        const int bins = std::uniform_int_distribution<>(2, 40)(rng);
        const auto a = random_bins(rng, 500, bins, 0.6);
        auto b = a;
        for (int& x : b)
            if (std::uniform_real_distribution<>(0, 1)(rng) < 0.4) x = std::uniform_int_distribution<>(0, bins - 1)(rng);
        CHECK(mi_of(a, b, bins) == doctest::Approx(direct_mi(a, b)).epsilon(1e-12));
    }
}

TEST_CASE("mi: properties — MI(A,A) = H(A), symmetry, relabelling invariance, independence") {
    std::mt19937 rng(2);
    const auto a = random_bins(rng, 4000, 16, 0.5);
    const auto b = random_bins(rng, 4000, 16, 0.3);
    std::map<int, double> pa;
    for (int x : a) pa[x] += 1.0 / a.size();
    double h = 0;
    for (auto [k, p] : pa) h -= p * std::log(p);
    CHECK(mi_of(a, a, 16) == doctest::Approx(h).epsilon(1e-12));
    CHECK(mi_of(a, b, 16) == doctest::Approx(mi_of(b, a, 16)).epsilon(1e-12));
    std::vector<int> relabel(16);
    for (int i = 0; i < 16; ++i) relabel[i] = (i * 7 + 3) % 16;  // a permutation of bins
    std::vector<int> ra(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) ra[i] = relabel[a[i]];
    CHECK(mi_of(ra, b, 16) == doctest::Approx(mi_of(a, b, 16)).epsilon(1e-12));
    CHECK(mi_of(a, b, 16) < 0.05);  // independent draws share almost nothing
    CHECK(mi_of(std::vector<int>(10, 0), std::vector<int>(10, 0), 4) == 0.0);
}

TEST_CASE("mi: histogram counts every window pixel, (0,0) pairs included") {
    std::mt19937 rng(3);
    const auto a = random_bins(rng, 30 * 20, 8, 0.8), b = random_bins(rng, 30 * 20, 8, 0.8);
    MiSearchParams p;
    p.bins = 8;
    p.max_shift = {2, 2, 0};
    p.window = {2, 2, 0, 26, 16, 1};
    std::vector<std::uint32_t> h(64);
    cpu::joint_histogram(bins_from(a, 30), bins_from(b, 30), p, -2, 1, 0, h.data());
    std::uint32_t total = 0, zero = 0;
    for (auto c : h) total += c;
    for (int y = 0; y < 16; ++y)
        for (int x = 0; x < 26; ++x) zero += a[(2 + y) * 30 + 2 + x] == 0 && b[(3 + y) * 30 + x] == 0;
    CHECK(total == 26 * 16);
    CHECK(h[0] == zero);
}
