#include "watch.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "../src/core/error.hpp"
#include "../src/core/interrupt.hpp"
#include "../src/io/mdoc.hpp"
#include "../src/io/stack_io.hpp"
#include "../src/output/atomic_write.hpp"
#include "plan/output_guard.hpp"

namespace fs = std::filesystem;

namespace stackalign {

namespace {

// What a file looked like when last seen.
struct Seen {
    std::uintmax_t size = 0;
    fs::file_time_type time{};
    Clock::time_point since;  // when it last changed
    bool operator==(const Seen& o) const { return size == o.size && time == o.time; }
};

Seen look(const std::string& path) {
    std::error_code ec;
    Seen s;
    s.size = fs::file_size(path, ec);
    s.time = fs::last_write_time(path, ec);
    s.since = Clock::now();
    return s;
}

// The .mdoc beside the stack lists as many views as the stack holds: the
// acquisition is over whatever the file's clock says.
bool mdoc_says_complete(const std::string& stack) {
    const std::string mdoc = mdoc_beside(stack);
    if (mdoc.empty()) return false;
    try {
        return int(read_mdoc(mdoc).views.size()) == probe_stack_file(stack).frames;
    } catch (const Error&) {
        return false;  // still being written
    }
}

// What a watch knows of its folder, shared by the workers: the series
// waiting to settle, ready, being aligned, done or failed. Every member is
// read and written under `lock`.
struct Folder {
    std::mutex lock;
    std::condition_variable changed;  // the watch is stopping, or a series finished
    std::deque<std::pair<Job, Seen>> ready;
    std::set<std::string> taken;            // stacks queued or being aligned
    std::map<std::size_t, std::pair<std::string, Seen>> running;  // by the series' number: its stack, as taken
    std::set<std::string> handled;          // stacks finished (or found up to date) in this watch
    std::map<std::string, Seen> seen;       // stacks waiting to settle
    std::map<std::string, Seen> failed_as;  // failed stacks, as they were when they failed
    std::vector<JobOutcome> outcomes;
    std::string summary_dir;
    std::size_t series_taken = 0;
    Clock::time_point last_look{};
    bool bad_verdict = false, interrupted = false;
    std::exception_ptr error;  // a look that failed (the config made unreadable): the watch stops with it

    // Reads the config again and queues the series complete now.
    void look_again(const std::string& config_path, const WatchOptions& w) {
        last_look = Clock::now();
        const Batch batch = load_jobs(config_path, true);
        if (!batch.is_batch || (!batch.jobs.empty() && batch.jobs.front().glob.empty()))
            throw ConfigError(config_path + ": watch needs [input] glob = \"...\": the stacks that arrive");
        check_outputs_spare_inputs(batch);  // a glob that would match the outputs is refused
        summary_dir = batch.summary_dir;
        for (const Job& job : batch.jobs) {
            const std::string& stack = job.config.input.stack;
            if (handled.count(stack) || taken.count(stack)) continue;
            const Seen now = look(stack);
            if (const auto f = failed_as.find(stack); f != failed_as.end() && f->second == now) continue;
            if (!w.once && !mdoc_says_complete(stack)) {
                auto s = seen.find(stack);
                if (s == seen.end() || !(s->second == now)) {
                    seen[stack] = now;
                    continue;
                }
                if (seconds_since(s->second.since) < w.settle_seconds) continue;
            }
            seen.erase(stack);
            taken.insert(stack);
            ready.emplace_back(job, now);
        }
    }
};

// Sleeps `seconds` in small steps; false when interrupted meanwhile.
bool wait_for(double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
        if (interrupt_requested()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return !interrupt_requested();
}

}  // namespace

int run_watch(const std::string& config_path, const RunOptions& opt, const WatchOptions& w,
              std::vector<JobOutcome>* out) {
    RunOptions each = opt;
    each.resume = true;  // a series aligned before, with the same inputs and config, is not redone
    Folder f;
    log_line(opt.verbosity, "watching " + config_path + (w.once ? " (once)" : "") + "; a series is taken once its file is unchanged for " +
                                std::to_string(w.settle_seconds).substr(0, 4) + " s or its .mdoc lists every view");
    auto stopped = [&](int code) {
        log_line(opt.verbosity, "watch: stopped; " + std::to_string(f.outcomes.size()) + " series handled");
        if (out) *out = f.outcomes;
        return code;
    };
    // Until the first series is complete the watch looks on this thread
    // (a config it cannot read stops it here, with its message); from then
    // on the workers do, each when it is free, so a series that completes
    // while others are aligned starts at once on a free GPU.
    for (;;) {
        if (interrupt_requested()) return stopped(0);
        f.look_again(config_path, w);
        if (!f.ready.empty()) break;
        if (w.once || !wait_for(w.poll_seconds)) return stopped(0);
    }
    const Job devices_from = f.ready.front().first;
    auto next = [&]() -> std::optional<std::pair<std::size_t, Job>> {
        std::unique_lock<std::mutex> hold(f.lock);
        for (;;) {
            if (f.error || interrupt_requested()) return std::nullopt;
            if (!f.ready.empty()) {
                auto [job, as] = std::move(f.ready.front());
                f.ready.pop_front();
                const std::size_t i = f.series_taken++;
                f.running[i] = {job.config.input.stack, as};
                return std::make_pair(i, std::move(job));
            }
            if (w.once) return std::nullopt;
            if (seconds_since(f.last_look) < w.poll_seconds) {
                // In short steps, so that SIGTERM stops an idle watch promptly.
                f.changed.wait_for(hold, std::chrono::milliseconds(50));
                continue;
            }
            try {
                f.look_again(config_path, w);
            } catch (...) {
                f.error = std::current_exception();
                f.changed.notify_all();
                return std::nullopt;
            }
        }
    };
    auto finished = [&](std::size_t i, JobOutcome&& o) {
        const std::lock_guard<std::mutex> hold(f.lock);
        const auto [stack, as] = f.running.at(i);
        f.running.erase(i);
        f.taken.erase(stack);
        if (o.status == "failed") f.failed_as[stack] = as;
        else f.handled.insert(stack);
        f.bad_verdict |= verdict_fails(o, opt.fail_on);
        if (o.status == "interrupted") f.interrupted = true;
        char line[512];
        std::snprintf(line, sizeof line, "watch: %s: %s%s%s, %.2f s; %zu series handled", o.name.c_str(), o.status.c_str(),
                      o.verdict().empty() ? "" : ", verdict ", o.verdict().c_str(), o.seconds, f.outcomes.size() + 1);
        log_line(opt.verbosity, o.status == "failed" ? std::string(line) + ": " + o.error : std::string(line));
        f.outcomes.push_back(std::move(o));
        try {
            fs::create_directories(f.summary_dir);
            write_text_atomically((fs::path(f.summary_dir) / "series_quality.csv").string(), series_quality_csv(f.outcomes));
        } catch (...) {
            f.error = std::current_exception();  // the other workers stop too, rather than wait for series
        }
        f.changed.notify_all();
    };
    run_jobs_spread(devices_from, 0, each, next, finished);
    if (f.error) std::rethrow_exception(f.error);
    if (f.interrupted) {
        if (out) *out = f.outcomes;
        return int(ExitCode::interrupted);
    }
    return stopped(w.once && f.bad_verdict ? int(ExitCode::verdict) : 0);
}

}  // namespace stackalign
