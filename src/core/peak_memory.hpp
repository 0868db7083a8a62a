// The peak resident memory of a job. Linux keeps one high-water mark per
// process, so a batch's later job would report the largest job before it.
// A job that may reset the mark does so at its start
// (/proc/self/clear_refs), and its peak is then the most the process held
// while it ran, the memory it found held included.
#pragma once
#include <cstdint>

namespace stackalign {

// The host's physical memory in bytes (0 where the system does not say).
std::uintmax_t physical_memory_bytes();

class PeakMemory {
public:
    // `reset`: the job may reset the mark (RunOptions::own_peak_memory).
    explicit PeakMemory(bool reset);
    double megabytes() const;
    // "job" when the mark was reset at the job's start, else "process".
    const char* of() const { return own_ ? "job" : "process"; }

private:
    bool own_ = false;
};

}  // namespace stackalign
