// Several workers at once, each on a host thread of its own (the pair
// searchers of one or more GPUs).
#pragma once
#include <functional>

namespace stackalign {

// Runs work(w) for every w in [0, count), each on a thread of its own (on the
// calling thread when count is 1), each thread's parallel loops with its
// share of the OpenMP threads; once all have returned, rethrows the first
// worker's exception, if any.
void run_workers(int count, const std::function<void(int)>& work);
// The OpenMP threads each of `count` workers runs its loops on.
int workers_threads(int count);
// Runs task(i) for every i in [0, count) on the calling thread's OpenMP
// threads, one task at a time each (tasks of uneven length: a frame, an
// image); once all have run, rethrows the exception of the lowest i that
// threw, as a loop in turn would have (none may leave a parallel region).
void run_tasks(int count, const std::function<void(int)>& task);

}  // namespace stackalign
