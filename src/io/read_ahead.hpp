// Reading a job's frames while it waits for something else: the GPU's
// start (the driver, then each GPU's context) takes 0.2-0.35 s on the H100
// host, about what reading a 0.5 GB series takes.
#pragma once
#include <atomic>
#include <thread>
#include <vector>

#include "stack_io.hpp"

namespace stackalign {

// Reads `views` into `frames`' cache, in order, on `threads` threads of its
// own, until stopped or done. A frame that fails to read is skipped and left
// for the stage that needs it, which reports the error with its context.
class ReadAhead {
public:
    ReadAhead(FrameReader& frames, std::vector<int> views, int threads);
    ReadAhead(const ReadAhead&) = delete;
    ReadAhead& operator=(const ReadAhead&) = delete;
    ~ReadAhead() { stop(); }
    // No read starts after this; returns once those under way are done,
    // with how many frames were read.
    int stop();
    // Returns once every view is read or skipped, with how many were read.
    int wait();

private:
    FrameReader& frames_;
    std::vector<int> views_;
    std::atomic<std::size_t> next_{0};
    std::atomic<int> read_{0};
    std::atomic<bool> stopping_{false};
    std::vector<std::thread> threads_;
};

// The first of `views` whose frames (`frame_bytes` each) fit in `cache_bytes`:
// the cache keeps what fits and no more, so reading beyond it gains nothing.
std::vector<int> views_that_fit(const std::vector<int>& views, std::size_t frame_bytes, std::size_t cache_bytes);

}  // namespace stackalign
