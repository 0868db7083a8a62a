#include "workers.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

#include "progress.hpp"

namespace stackalign {

int workers_threads(int count) { return std::max(1, omp_get_max_threads() / std::max(count, 1)); }

void run_workers(int count, const std::function<void(int)>& work) {
    if (count <= 1) {
        if (count == 1) work(0);
        return;
    }
    // A new thread starts with the process's default thread count, not the
    // caller's (--threads), and each worker's loops would otherwise take
    // all the cores at once.
    const int threads_each = workers_threads(count);
    const std::string& prefix = LogPrefix::current();
    std::vector<std::exception_ptr> errors(count);
    std::vector<std::thread> threads;
    for (int w = 0; w < count; ++w)
        threads.emplace_back([&, w] {
            try {
                const LogPrefix same(prefix);
                omp_set_num_threads(threads_each);
                work(w);
            } catch (...) {
                errors[w] = std::current_exception();
            }
        });
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
}

void run_tasks(int count, const std::function<void(int)>& task) {
    std::vector<std::exception_ptr> errors(std::max(count, 0));
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < count; ++i) {
        try {
            task(i);
        } catch (...) {
            errors[i] = std::current_exception();
        }
    }
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace stackalign
