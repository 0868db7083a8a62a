// The pair board (pipelines/stages/pair_tasks.hpp): every pair and skip is
// handed out once, a skip only after its two neighbour pairs are done; an
// unstretched series' searcher whose own chain is done takes the tail of a
// slower searcher's, and a stretched one's searchers keep their own tasks;
// a closed board hands out nothing, even to a searcher waiting on it.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "../pipelines/stages/pair_tasks.hpp"
#include "../src/core/workers.hpp"

using namespace stackalign;

namespace {

// A list of tasks as (from, step) pairs, which doctest can compare and print.
using Listed = std::vector<std::pair<int, int>>;
Listed listed(const std::vector<PairTask>& tasks) {
    Listed l;
    for (const PairTask& t : tasks) l.push_back({t.from, t.step});
    return l;
}

// 13 views, the reference in the middle, least squares (12 pairs, 11 skips).
StackPlan thirteen_views(int searchers, bool stretch) {
    StackPlan plan;
    for (int v = 0; v < 13; ++v) plan.kept.push_back(v);
    plan.reference = 6;
    plan.frames = 13;
    plan.searchers = searchers;
    plan.stretch = stretch;
    return plan;
}

// What each searcher was handed, in order, with `slow` searchers taking
// `slow_ms` a task and the others none; checks, as the tasks are handed
// out, that no task comes twice and no skip comes before its neighbours.
struct Handed {
    std::vector<std::vector<PairTask>> by_searcher;
    int tasks = 0;
};
Handed hand_out(const std::vector<Run>& runs, int pairs, int skips, bool share, const std::vector<int>& slow,
                int slow_ms) {
    PairBoard board(runs, pairs, skips, share);
    std::vector<bool> pair_done(pairs, false), pair_handed(pairs, false), skip_handed(skips, false);
    std::mutex lock;
    Handed h;
    h.by_searcher.resize(runs.size());
    // Called under the board's lock as each task is marked done, so the
    // flags are set before the board can hand out what waited on it (and
    // under `lock`, which the searchers hold as they read them).
    const PairBoard::Check mark = [&](const std::vector<bool>& done, const std::vector<bool>&, int) {
        const std::lock_guard<std::mutex> hold(lock);
        pair_done = done;
        return false;
    };
    run_workers(int(runs.size()), [&](int w) {
        double waited = 0;
        while (const std::optional<PairTask> t = board.next(w, waited)) {
            {
                const std::lock_guard<std::mutex> hold(lock);
                h.by_searcher[w].push_back(*t);
                ++h.tasks;
                std::vector<bool>& handed = t->step == 1 ? pair_handed : skip_handed;
                CHECK_FALSE(handed[t->from]);
                handed[t->from] = true;
                if (t->step == 2) {
                    CHECK(pair_done[t->from]);
                    CHECK(pair_done[t->from + 1]);
                }
            }
            if (std::find(slow.begin(), slow.end(), w) != slow.end())
                std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms));
            board.finish(*t, mark);
        }
    });
    CHECK(std::count(pair_handed.begin(), pair_handed.end(), true) == pairs);
    CHECK(std::count(skip_handed.begin(), skip_handed.end(), true) == skips);
    CHECK_FALSE(board.closed());
    return h;
}

}  // namespace

TEST_CASE("pair tasks: chains outward from the reference, skips after both neighbours, the skips across chains last") {
    const std::vector<Run> runs = split_pairs(thirteen_views(3, false), 12, 11);
    REQUIRE(runs.size() == 3);
    CHECK(listed(runs[0].tasks) == Listed{{3, 1}, {2, 1}, {2, 2}, {1, 1}, {1, 2}, {0, 1}, {0, 2}});
    CHECK(listed(runs[1].tasks) == Listed{{6, 1}, {7, 1}, {6, 2}, {5, 1}, {5, 2}, {4, 1}, {4, 2}, {3, 2}, {7, 2}});
    CHECK(listed(runs[2].tasks) == Listed{{8, 1}, {9, 1}, {8, 2}, {10, 1}, {9, 2}, {11, 1}, {10, 2}});
}

TEST_CASE("pair tasks: searchers with their own work done take the tail of a slow searcher's chain") {
    const std::vector<Run> runs = split_pairs(thirteen_views(3, false), 12, 11);
    // Searcher 0 takes 30 ms a task, the others none: it is left the first
    // pair or two of its chain of 4.
    const Handed h = hand_out(runs, 12, 11, true, {0}, 30);
    CHECK(h.tasks == 23);
    CHECK(h.by_searcher[0].size() < runs[0].tasks.size());
    // Its pairs are the head of its own chain, in order (besides them it
    // may take a skip the others set aside); the rest went to the others.
    std::vector<int> own_pairs, chain_pairs;
    for (const PairTask& t : h.by_searcher[0])
        if (t.step == 1) own_pairs.push_back(t.from);
    for (const PairTask& t : runs[0].tasks)
        if (t.step == 1) chain_pairs.push_back(t.from);
    CHECK(own_pairs.size() >= 1);
    CHECK(own_pairs.size() <= 2);
    CHECK(std::equal(own_pairs.begin(), own_pairs.end(), chain_pairs.begin()));
}

TEST_CASE("pair tasks: stretched chains keep their own tasks, skip searchers waiting on them") {
    // Two chains from the reference and a skip searcher for each.
    const std::vector<Run> runs = split_pairs(thirteen_views(4, true), 12, 11);
    REQUIRE(runs.size() == 4);
    CHECK(runs[2].waits);
    CHECK(runs[3].waits);
    // The chains slow, the skip searchers waiting on them; nothing changes hands.
    const Handed h = hand_out(runs, 12, 11, false, {0, 1}, 2);
    CHECK(h.tasks == 23);
    for (std::size_t w = 0; w < runs.size(); ++w) {
        CAPTURE(w);
        CHECK(listed(h.by_searcher[w]) == listed(runs[w].tasks));
    }
}

TEST_CASE("pair tasks: a closed board hands out nothing, and a searcher waiting on it returns") {
    std::vector<Run> runs(2);
    runs[0].tasks = {{0, 2}};  // waits for pairs 0 and 1; nobody searches pair 1
    runs[1].tasks = {{0, 1}};
    for (const bool share : {false, true}) {
        CAPTURE(share);
        PairBoard board(runs, 2, 1, share);
        double waited = 0;
        std::optional<PairTask> got = PairTask{};
        std::thread waiting([&] { got = board.next(0, waited); });
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        board.close();
        waiting.join();
        CHECK_FALSE(got);
        CHECK_FALSE(board.next(1, waited));
        CHECK(board.closed());
    }
    // A check that says stop closes the board once the task is marked.
    PairBoard board(runs, 2, 1, true);
    double waited = 0;
    const std::optional<PairTask> first = board.next(1, waited);
    REQUIRE(first);
    CHECK(first->from == 0);
    CHECK(board.finish(*first, [](const std::vector<bool>& pairs, const std::vector<bool>&, int finished) {
        return pairs[0] && finished == 1;
    }));
    CHECK_FALSE(board.next(1, waited));
}
