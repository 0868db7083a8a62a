#include "read_ahead.hpp"

#include <algorithm>

namespace stackalign {

ReadAhead::ReadAhead(FrameReader& frames, std::vector<int> views, int threads)
    : frames_(frames), views_(std::move(views)) {
    const int n = std::min<int>(std::max(threads, 1), int(views_.size()));
    for (int t = 0; t < n; ++t)
        threads_.emplace_back([this] {
            for (std::size_t i; !stopping_ && (i = next_++) < views_.size();) {
                try {
                    frames_.read(views_[i]);
                    ++read_;
                } catch (...) {  // the stage that needs it says what is wrong
                }
            }
        });
}

int ReadAhead::stop() {
    stopping_ = true;
    return wait();
}

int ReadAhead::wait() {
    for (std::thread& t : threads_)
        if (t.joinable()) t.join();
    return read_;
}

std::vector<int> views_that_fit(const std::vector<int>& views, std::size_t frame_bytes, std::size_t cache_bytes) {
    const std::size_t n = frame_bytes ? std::min(views.size(), cache_bytes / frame_bytes) : views.size();
    return {views.begin(), views.begin() + std::ptrdiff_t(n)};
}

}  // namespace stackalign
