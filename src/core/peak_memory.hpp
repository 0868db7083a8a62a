// The peak resident memory of a job. Linux keeps one high-water mark per
// process, so a job that shares its process with others before it (a
// batch's later jobs, a Python session's later calls) would report the
// largest of them all. A job alone in its process resets the mark at its
// start (/proc/self/clear_refs), and its peak is then the most the process
// held while it ran, the memory it found held included.
#pragma once

namespace stackalign {

class PeakMemory {
public:
    // `alone`: no other job runs in the process meanwhile (jobs at once in
    // a batch share the mark, and one job's reset would cut another's).
    explicit PeakMemory(bool alone);
    double megabytes() const;
    // "job" when the mark was reset at the job's start, else "process".
    const char* of() const { return own_ ? "job" : "process"; }

private:
    bool own_ = false;
};

}  // namespace stackalign
