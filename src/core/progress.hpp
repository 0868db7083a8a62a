// Progress for long runs: a self-updating line on a terminal, plain log lines
// (every 10% or 10 s) when stderr is a file, nothing with --quiet.
#pragma once
#include <chrono>
#include <functional>
#include <string>

namespace stackalign {

enum class Verbosity { quiet, normal, verbose };

class Progress {
public:
    Progress(std::string what, int total, Verbosity v);
    void step(int done);  // `done` items finished so far
    void finish();

private:
    std::string what_;
    std::string prefix_;  // LogPrefix::current() where it was made
    int total_;
    Verbosity verbosity_;
    bool tty_;
    int last_logged_ = 0;
    std::chrono::steady_clock::time_point start_, last_time_;
};

// Told of every step of every Progress, whatever the verbosity (the Python
// module's progress callback); set for the length of a run, from the thread
// that runs it. Empty: nobody listens.
using ProgressObserver = std::function<void(const std::string& what, int done, int total)>;
void set_progress_observer(ProgressObserver observer);

// One log line to stderr, prefixed "stackalign: " and the calling thread's
// LogPrefix, unless quiet.
void log_line(Verbosity v, const std::string& line);

// What starts the log lines of one of a batch's jobs while others run beside
// it ("name: "), so that their lines can be told apart. Set for the length
// of a job on the thread that runs it; run_workers passes it on to the
// threads it starts, and a Progress keeps the one it was made with.
class LogPrefix {
public:
    explicit LogPrefix(std::string prefix);
    ~LogPrefix();
    LogPrefix(const LogPrefix&) = delete;
    LogPrefix& operator=(const LogPrefix&) = delete;
    static const std::string& current();  // the calling thread's ("" when none)

private:
    std::string previous_;
};

}  // namespace stackalign
