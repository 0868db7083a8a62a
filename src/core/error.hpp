// One error family for the whole program. Each kind maps to one exit code at
// the CLI, so batch scripts can tell a bad config from a bad file from a GPU
// failure without parsing messages.
#pragma once
#include <stdexcept>
#include <string>

namespace stackalign {

enum class ExitCode : int {
    ok = 0,
    usage = 1,        // bad command line
    config = 2,       // the TOML config is invalid
    input = 3,        // an input file is missing, unreadable or of an unsupported layout
    unsupported = 4,  // a valid request this build/machine cannot do (e.g. CUDA without a GPU)
    output = 5,       // an output could not be written
    internal = 6,     // GPU/CUDA failure or a bug
    batch_failed = 7, // a batch ran to the end but some of its jobs failed (see batch.json)
    fit = 8,          // landmarks: the requested fit cannot be made from the matches (too few, degenerate)
    verdict = 9,      // run --fail-on: a run's verdict was as bad as asked (run.json quality; the outputs are written)
    interrupted = 130,// SIGINT or SIGTERM: stopped between steps, no output left looking complete
};

class Error : public std::runtime_error {
public:
    Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
    ExitCode code() const noexcept { return code_; }

private:
    ExitCode code_;
};

struct ConfigError : Error {
    explicit ConfigError(const std::string& m) : Error(ExitCode::config, m) {}
};
struct InputError : Error {
    explicit InputError(const std::string& m) : Error(ExitCode::input, m) {}
};
struct UnsupportedError : Error {
    explicit UnsupportedError(const std::string& m) : Error(ExitCode::unsupported, m) {}
};
struct OutputError : Error {
    explicit OutputError(const std::string& m) : Error(ExitCode::output, m) {}
};
struct FitError : Error {
    explicit FitError(const std::string& m) : Error(ExitCode::fit, m) {}
};
struct Interrupted : Error {
    explicit Interrupted(const std::string& m) : Error(ExitCode::interrupted, m) {}
};
struct InternalError : Error {
    explicit InternalError(const std::string& m) : Error(ExitCode::internal, m) {}
};

}  // namespace stackalign
