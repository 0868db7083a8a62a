#include "watch.hpp"

#include <chrono>
#include <filesystem>
#include <map>
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
    std::vector<JobOutcome> outcomes;
    std::set<std::string> handled;          // stacks finished (or found up to date) in this watch
    std::map<std::string, Seen> seen;       // stacks waiting to settle
    std::map<std::string, Seen> failed_as;  // failed stacks, as they were when they failed
    std::string summary_dir;
    bool bad_verdict = false;
    log_line(opt.verbosity, "watching " + config_path + (w.once ? " (once)" : "") + "; a series is taken once its file is unchanged for " +
                                std::to_string(w.settle_seconds).substr(0, 4) + " s or its .mdoc lists every view");
    for (;;) {
        if (interrupt_requested()) break;
        const Batch batch = load_jobs(config_path, true);
        if (!batch.is_batch || (!batch.jobs.empty() && batch.jobs.front().glob.empty()))
            throw ConfigError(config_path + ": watch needs [input] glob = \"...\": the stacks that arrive");
        check_outputs_spare_inputs(batch);  // a glob that would match the outputs is refused
        summary_dir = batch.summary_dir;
        // The series ready now, run as a batch runs them: a backlog (a
        // watch started after a session, or --once) spreads over the GPUs.
        std::vector<Job> ready;
        std::vector<Seen> ready_as;
        for (const Job& job : batch.jobs) {
            const std::string& stack = job.config.input.stack;
            if (handled.count(stack)) continue;
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
            ready.push_back(job);
            ready_as.push_back(now);
        }
        bool interrupted = false;
        run_jobs_spread(ready, each, [&](std::size_t i, JobOutcome&& o) {
            const std::string& stack = ready[i].config.input.stack;
            if (o.status == "interrupted") interrupted = true;
            seen.erase(stack);
            if (o.status == "failed") failed_as[stack] = ready_as[i];
            else handled.insert(stack);
            bad_verdict |= verdict_fails(o, opt.fail_on);
            char line[512];
            std::snprintf(line, sizeof line, "watch: %s: %s%s%s, %.2f s; %zu series handled", o.name.c_str(), o.status.c_str(),
                          o.verdict().empty() ? "" : ", verdict ", o.verdict().c_str(), o.seconds, outcomes.size() + 1);
            log_line(opt.verbosity, o.status == "failed" ? std::string(line) + ": " + o.error : std::string(line));
            outcomes.push_back(std::move(o));
            fs::create_directories(summary_dir);
            write_text_atomically((fs::path(summary_dir) / "series_quality.csv").string(), series_quality_csv(outcomes));
        });
        if (interrupted) {
            if (out) *out = outcomes;
            return int(ExitCode::interrupted);
        }
        if (interrupt_requested()) break;
        if (w.once || !wait_for(w.poll_seconds)) break;
    }
    log_line(opt.verbosity, "watch: stopped; " + std::to_string(outcomes.size()) + " series handled");
    if (out) *out = outcomes;
    return w.once && bad_verdict ? int(ExitCode::verdict) : 0;
}

}  // namespace stackalign
