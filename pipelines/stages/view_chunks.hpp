// Every view of a list handed to a function in parallel, one thread a view.
// The views are read a chunk at a time on the calling thread (the frame
// reader is not shared between threads), and only a chunk's frames are held
// at once, so a series larger than memory still streams.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "../../src/io/stack_io.hpp"

namespace stackalign {

// f(k, frame): frame is view order[k].
template <typename F>
void for_each_view_read(FrameReader& frames, const std::vector<int>& order, F&& f) {
    const std::size_t chunk = std::size_t(4) * std::max(1, omp_get_max_threads());
    for (std::size_t first = 0; first < order.size(); first += chunk) {
        const std::size_t n = std::min(chunk, order.size() - first);
        std::vector<std::shared_ptr<const RawFrame>> held(n);
        for (std::size_t k = 0; k < n; ++k) held[k] = frames.read(order[first + k]);
#pragma omp parallel for schedule(dynamic, 1)
        for (std::size_t k = 0; k < n; ++k) f(first + k, *held[k]);
    }
}

}  // namespace stackalign
