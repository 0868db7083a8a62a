#include "pair_tasks.hpp"

#include <algorithm>

#include "../run_options.hpp"

namespace stackalign {
namespace {

// Contiguous chains of pairs, one per searcher, each taken outward from the
// reference (right of it ascending, then left of it descending), so each
// pair has one view placed by the pair before it. With cosine stretching the
// higher-tilt view is stretched about that placed view, so a chain must
// start at the reference: two chains at most, its right and its left.
std::vector<std::vector<int>> pair_chains(const StackPlan& plan, int pairs, int workers) {
    const int r = plan.kept_reference();
    auto outward = [&](int from, int to) {
        std::vector<int> chain;
        for (int i = std::max(from, r); i < to; ++i) chain.push_back(i);
        for (int i = std::min(to, r) - 1; i >= from; --i) chain.push_back(i);
        return chain;
    };
    if (workers <= 1 || pairs <= 1) return {outward(0, pairs)};
    if (plan.stretch) {
        if (r <= 0 || r >= pairs) return {outward(0, pairs)};
        return {outward(r, pairs), outward(0, r)};
    }
    const int n = std::min(workers, pairs);
    std::vector<std::vector<int>> chains;
    for (int w = 0; w < n; ++w) chains.push_back(outward(pairs * w / n, pairs * (w + 1) / n));
    return chains;
}

}  // namespace

// Each chain's pairs, each skip (i, i + 2) as soon as the same searcher has
// done both its neighbours (its views are still in the slots); the skips
// whose neighbours two searchers did come after the chain, on the searcher
// that placed the skip's nearer view (what a stretched skip is stretched about).
std::vector<Run> split_pairs(const StackPlan& plan, int pairs, int skips) {
    const std::vector<int> gpus = searcher_gpus(plan);
    const std::vector<std::vector<int>> chains = pair_chains(plan, pairs, plan.searchers);
    std::vector<Run> runs(chains.size());
    std::vector<int> owner(std::max(pairs, 0), -1);  // the searcher of each pair taken so far
    std::vector<bool> placed(std::max(skips, 0), false);
    for (std::size_t w = 0; w < chains.size(); ++w) {
        runs[w].gpu = gpus[w % gpus.size()];
        for (int i : chains[w]) {
            runs[w].tasks.push_back({i, 1});
            owner[i] = int(w);
            for (int k : {i - 1, i})
                if (k >= 0 && k < skips && !placed[k] && owner[k] == int(w) && owner[k + 1] == int(w)) {
                    runs[w].tasks.push_back({k, 2});
                    placed[k] = true;
                }
        }
    }
    const int r = plan.kept_reference();
    for (int k = 0; k < skips; ++k)
        if (!placed[k]) runs[owner[k < r ? k + 1 : k]].tasks.push_back({k, 2});
    // A stretched series has two chains at most, and each step of a chain
    // waits for the one before it (its view is stretched about the place the
    // step before found): a skip searched in between delays the chain by its
    // load, search and refinement. Searchers the chains leave free take the
    // skips instead, each skip once its two neighbour pairs are done; the
    // chains then run their pairs alone. Results do not change: a skip sees
    // the same views, neighbours and places either way.
    const int spare = std::min(plan.searchers - int(chains.size()), int(chains.size()));
    if (plan.stretch && spare > 0 && skips > 0) {
        std::vector<Run> skip_runs(spare);
        for (std::size_t w = 0; w < chains.size(); ++w) {
            Run& to = skip_runs[w % spare];
            to.gpu = gpus[(chains.size() + w % spare) % gpus.size()];
            to.waits = true;
            std::vector<PairTask> kept_pairs;
            for (const PairTask& t : runs[w].tasks) (t.step == 1 ? kept_pairs : to.tasks).push_back(t);
            runs[w].tasks = kept_pairs;
        }
        // One skip searcher for two chains takes their skips in turn, as the
        // chains advance together.
        for (Run& to : skip_runs) {
            if (chains.size() / spare < 2) continue;
            std::stable_sort(to.tasks.begin(), to.tasks.end(), [&](const PairTask& a, const PairTask& b) {
                return std::abs(a.from + 1 - r) < std::abs(b.from + 1 - r);
            });
        }
        runs.insert(runs.end(), skip_runs.begin(), skip_runs.end());
    }
    return runs;
}

PairBoard::PairBoard(const std::vector<Run>& runs, int pairs, int skips, bool share)
    : queues_(runs.size()), pair_done_(std::max(pairs, 0), false), skip_done_(std::max(skips, 0), false), share_(share) {
    for (std::size_t w = 0; w < runs.size(); ++w) queues_[w].assign(runs[w].tasks.begin(), runs[w].tasks.end());
}

std::optional<PairTask> PairBoard::next(int w, double& waited) {
    std::unique_lock<std::mutex> hold(lock_);
    for (;;) {
        if (closed_) return std::nullopt;
        std::deque<PairTask>& own = queues_[w];
        if (!own.empty() && (ready(own.front()) || share_)) {
            const PairTask t = own.front();
            own.pop_front();
            if (ready(t)) return t;
            set_aside_.push_back(t);
            continue;
        }
        if (share_) {
            const auto found = std::find_if(set_aside_.begin(), set_aside_.end(), [&](const PairTask& t) { return ready(t); });
            if (found != set_aside_.end()) {
                const PairTask t = *found;
                set_aside_.erase(found);
                return t;
            }
            if (steal(w)) continue;
        }
        // Nothing to take now. What is left is a skip whose neighbours are
        // still being searched (each queue holding a pair has its searcher
        // at work), or nothing at all.
        if (own.empty() && set_aside_.empty()) return std::nullopt;
        const auto t = Clock::now();
        changed_.wait(hold);
        waited += seconds_since(t);
    }
}

bool PairBoard::steal(int w) {
    auto pairs_in = [](const std::deque<PairTask>& q) {
        return int(std::count_if(q.begin(), q.end(), [](const PairTask& t) { return t.step == 1; }));
    };
    int victim = -1, most = 1;  // a searcher keeps at least one pair of its own
    for (int v = 0; v < int(queues_.size()); ++v) {
        const int left = v == w ? 0 : pairs_in(queues_[v]);
        if (left > most) victim = v, most = left;
    }
    if (victim < 0) return false;
    std::deque<PairTask>& from = queues_[victim];
    std::deque<PairTask>& to = queues_[w];
    for (int moved = 0; moved < most / 2;) {
        moved += from.back().step == 1;
        to.push_front(from.back());
        from.pop_back();
    }
    return true;
}

bool PairBoard::finish(const PairTask& t, const Check& check) {
    bool closed_now;
    {
        const std::lock_guard<std::mutex> hold(lock_);
        (t.step == 1 ? pair_done_ : skip_done_)[t.from] = true;
        ++finished_;
        if (!closed_ && check && check(pair_done_, skip_done_, finished_)) closed_ = true;
        closed_now = closed_;
    }
    changed_.notify_all();
    return closed_now;
}

void PairBoard::close() {
    {
        const std::lock_guard<std::mutex> hold(lock_);
        closed_ = true;
    }
    changed_.notify_all();
}

bool PairBoard::closed() {
    const std::lock_guard<std::mutex> hold(lock_);
    return closed_;
}

}  // namespace stackalign
