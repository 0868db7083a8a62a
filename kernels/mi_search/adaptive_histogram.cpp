#include "adaptive_histogram.hpp"

#include <cmath>
#include <queue>

namespace stackalign {

namespace {
// Probabilities of the non-(0,0) bins; all zero when there are none.
std::vector<double> normalised(const std::uint32_t* hist, int bins) {
    const int bb = bins * bins;
    std::vector<double> p(bb, 0.0);
    double sum = 0;
    for (int b = 1; b < bb; ++b) sum += hist[b];
    if (sum > 0)
        for (int b = 1; b < bb; ++b) p[b] = hist[b] / sum;
    return p;
}
constexpr int kMaxLevel = 6;  // 32 replicas: one per lane
}  // namespace

double expected_collisions(int n, double p) { return n * p + std::pow(1.0 - p, n) - 1.0; }

double bin_cost(double p, int level, const AdaptiveCosts& c) {
    if (level == 0) return c.warp * p * c.global_update + c.global_collision * expected_collisions(c.warp, p);
    const int replicas = 1 << (level - 1);
    return c.warp * p * c.shared_update +
           c.shared_collision * replicas * expected_collisions(c.warp / replicas, p);
}

AdaptiveConfig optimise_adaptive(const std::uint32_t* hist, int bins, int capacity_slots, const AdaptiveCosts& c) {
    const int bb = bins * bins;
    AdaptiveConfig cfg;
    cfg.source = normalised(hist, bins);
    cfg.level.assign(bb, 0);
    cfg.offset.assign(bb, -1);
    const std::vector<double>& p = cfg.source;
    for (int b = 1; b < bb; ++b) cfg.global_cost += bin_cost(p[b], 0, c);

    // Best move of each bin: the saving per extra slot of its next level.
    struct Move {
        double gain_per_slot;
        int bin, level;  // level it would go to
        bool operator<(const Move& o) const {
            return gain_per_slot != o.gain_per_slot ? gain_per_slot < o.gain_per_slot : bin > o.bin;
        }
    };
    auto extra_slots = [](int level) { return level == 1 ? 1 : 1 << (level - 2); };
    auto move_of = [&](int b, int to) {
        return Move{(bin_cost(p[b], to - 1, c) - bin_cost(p[b], to, c)) / extra_slots(to), b, to};
    };
    std::priority_queue<Move> moves;
    for (int b = 1; b < bb; ++b)
        if (p[b] > 0) moves.push(move_of(b, 1));
    int used = 0;
    while (!moves.empty()) {
        const Move m = moves.top();
        moves.pop();
        if (m.gain_per_slot <= 0) break;
        if (used + extra_slots(m.level) > capacity_slots) continue;  // a cheaper move may still fit
        used += extra_slots(m.level);
        cfg.level[m.bin] = m.level;
        if (m.level < kMaxLevel && (c.warp >> m.level) >= 1) moves.push(move_of(m.bin, m.level + 1));
    }
    // Replicas of one bin are contiguous; offsets in bin order.
    for (int b = 0; b < bb; ++b)
        if (cfg.level[b]) {
            cfg.offset[b] = cfg.slots;
            cfg.slots += cfg.replicas(b);
        }
    for (int b = 1; b < bb; ++b) cfg.expected_cost += bin_cost(p[b], cfg.level[b], c);
    return cfg;
}

double histogram_drift(const AdaptiveConfig& config, const std::uint32_t* hist, int bins) {
    const std::vector<double> now = normalised(hist, bins);
    double d = 0;
    for (std::size_t b = 0; b < now.size(); ++b) d += std::fabs(now[b] - config.source[b]);
    return d / 2;
}

}  // namespace stackalign
