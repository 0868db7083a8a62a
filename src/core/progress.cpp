#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace stackalign {

namespace {
ProgressObserver observer;
thread_local std::string prefix;
}

LogPrefix::LogPrefix(std::string p) : previous_(std::move(prefix)) { prefix = std::move(p); }
LogPrefix::~LogPrefix() { prefix = std::move(previous_); }
const std::string& LogPrefix::current() { return prefix; }

void set_progress_observer(ProgressObserver o) { observer = std::move(o); }

void log_line(Verbosity v, const std::string& line) {
    if (v == Verbosity::quiet) return;
    std::fprintf(stderr, "stackalign: %s%s\n", prefix.c_str(), line.c_str());
}

Progress::Progress(std::string what, int total, Verbosity v)
    // Beside other jobs' lines a self-updating line would overwrite theirs: plain lines instead.
    : what_(std::move(what)), prefix_(LogPrefix::current()), total_(total), verbosity_(v),
      tty_(prefix_.empty() && isatty(fileno(stderr)) != 0),
      start_(std::chrono::steady_clock::now()), last_time_(start_) {}

void Progress::step(int done) {
    if (observer) observer(what_, done, total_);
    if (verbosity_ == Verbosity::quiet || total_ <= 0) return;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double rate = elapsed > 0 ? done / elapsed : 0;
    const double eta = rate > 0 ? (total_ - done) / rate : 0;
    if (tty_) {
        std::fprintf(stderr, "\rstackalign: %s %d/%d  %.1f/s  ETA %.0fs   ", what_.c_str(), done, total_, rate, eta);
        std::fflush(stderr);
        return;
    }
    const bool tenth = done * 10 / total_ > last_logged_ * 10 / total_;
    const bool slow = std::chrono::duration<double>(now - last_time_).count() > 10;
    if (tenth || slow || done == total_) {
        std::fprintf(stderr, "stackalign: %s%s %d/%d (%.1f/s, ETA %.0fs)\n", prefix_.c_str(), what_.c_str(), done,
                     total_, rate, eta);
        last_logged_ = done;
        last_time_ = now;
    }
}

void Progress::finish() {
    if (verbosity_ != Verbosity::quiet && tty_) std::fprintf(stderr, "\n");
}

}  // namespace stackalign
