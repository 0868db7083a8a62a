// Which searcher searches which pair, and when: the chains each searcher
// starts with, and the board that hands their pairs and skips out as the
// searchers ask, so that one searcher that runs slow (a busier core, costlier
// pairs) does not hold the stage while the others sit idle.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "../plan/stack_plan.hpp"

namespace stackalign {

// One pair to search: kept[from] -> kept[from + step], step 1 (neighbours)
// or 2 (the skip pairs of the least-squares solve).
struct PairTask {
    int from = 0, step = 1;
};

// The tasks one searcher starts with, in the order it takes them. Skips are
// searched around what their two neighbour pairs predict, so each comes
// after both: on the same searcher, or later (after its chain) on the
// searcher of one of them, or on a skip searcher that waits for them (`waits`).
struct Run {
    int gpu = 0;
    std::vector<PairTask> tasks;
    bool waits = false;
};
std::vector<Run> split_pairs(const StackPlan& plan, int pairs, int skips);

// Hands each searcher its next task. A skip is handed out only once its two
// neighbour pairs are done. A searcher takes its own run's tasks in order;
// with `share` (a series without cosine stretching, whose pairs need no
// pair before them), a skip whose neighbours another searcher still has is
// set aside for whichever searcher is free once they are done, and a
// searcher whose own tasks are done takes the later half of the pairs left
// to the searcher with most (its chain's tail, so the thief's pairs still
// share views one after the other). Without `share` (stretched chains, each
// step stretched about the place the step before found) a searcher waits
// for its skip's neighbours. A pair's result does not depend on which
// searcher takes it, so neither do the answers.
class PairBoard {
public:
    PairBoard(const std::vector<Run>& runs, int pairs, int skips, bool share);
    // Searcher w's next task, or nothing once none is left that it could take
    // or the board is closed; `waited` grows by the seconds spent waiting.
    std::optional<PairTask> next(int w, double& waited);
    // Which pairs and skips are done, and how many tasks in all; true closes the board.
    using Check = std::function<bool(const std::vector<bool>& pairs_done, const std::vector<bool>& skips_done, int finished)>;
    // Marks `t` done and asks `check`, under the board's lock. Returns
    // whether the board is closed.
    bool finish(const PairTask& t, const Check& check);
    // No task is handed out from now on; searchers waiting return nothing.
    void close();
    bool closed();

private:
    bool ready(const PairTask& t) const { return t.step == 1 || (pair_done_[t.from] && pair_done_[t.from + 1]); }
    bool steal(int w);

    std::mutex lock_;
    std::condition_variable changed_;
    std::vector<std::deque<PairTask>> queues_;
    std::vector<PairTask> set_aside_;  // `share`: skips waiting for neighbours done elsewhere
    std::vector<bool> pair_done_, skip_done_;
    int finished_ = 0;
    bool share_, closed_ = false;
};

}  // namespace stackalign
