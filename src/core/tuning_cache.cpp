#include "tuning_cache.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "atomic_file.hpp"
#include "version.hpp"

namespace fs = std::filesystem;

namespace stackalign {
namespace {

constexpr const char* kFormat = "stackalign GPU tuning cache 1";

// The file's entries, or an empty object where it is missing, unreadable
// or not ours (then a write replaces it: nothing in it could be read back).
nlohmann::json read_entries(const std::string& path) {
    std::ifstream in(path);
    if (!in) return nlohmann::json::object();
    try {
        const nlohmann::json j = nlohmann::json::parse(in);
        if (j.is_object() && j.value("format", "") == kFormat && j.contains("entries") && j["entries"].is_object())
            return j["entries"];
    } catch (const nlohmann::json::exception&) {
    }
    return nlohmann::json::object();
}

// Holds an exclusive lock on `path`.lock while it lives, so that two
// processes adding entries at once do not drop each other's. Where the
// file system has no locks (some network mounts) it holds nothing: an
// entry may then be lost, and is timed again by the next run.
class FileLock {
public:
    explicit FileLock(const std::string& path) : fd_(::open((path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
        if (fd_ >= 0) ::flock(fd_, LOCK_EX);
    }
    ~FileLock() {
        if (fd_ >= 0) ::close(fd_);  // closing releases the lock
    }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

private:
    int fd_;
};

}  // namespace

std::string tuning_cache_path() {
    if (const char* set = std::getenv("STACKALIGN_TUNING_CACHE")) {
        const std::string path = set;
        return path == "off" ? "" : path;
    }
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg) return (fs::path(xdg) / "stackalign" / "gpu_tuning.json").string();
    const char* home = std::getenv("HOME");
    if (home && *home) return (fs::path(home) / ".cache" / "stackalign" / "gpu_tuning.json").string();
    return "";
}

std::optional<RememberedChoice> recall_tuning(const std::string& path, const std::string& key) {
    if (path.empty()) return std::nullopt;
    const nlohmann::json entries = read_entries(path);
    const auto it = entries.find(key);
    if (it == entries.end() || !it->is_object() || !(*it)["choice"].is_string()) return std::nullopt;
    return RememberedChoice{(*it)["choice"].get<std::string>(), it->value("times", "")};
}

std::string remember_tuning(const std::string& path, const std::string& key, const RememberedChoice& choice) {
    if (path.empty()) return "no tuning cache";
    try {
        std::error_code ec;
        const fs::path folder = fs::path(path).parent_path();
        if (!folder.empty()) fs::create_directories(folder, ec);
        if (ec) return folder.string() + ": " + ec.message();
        const FileLock lock(path);
        nlohmann::json entries = read_entries(path);
        const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
        entries[key] = {{"choice", choice.choice}, {"times", choice.times}, {"saved", now}};
        if (int(entries.size()) > kTuningCacheEntries) {
            std::vector<std::pair<long long, std::string>> by_age;
            for (auto it = entries.begin(); it != entries.end(); ++it)
                by_age.emplace_back(it->is_object() ? it->value("saved", 0LL) : 0LL, it.key());
            std::sort(by_age.begin(), by_age.end());
            for (std::size_t i = 0; i + kTuningCacheEntries < by_age.size(); ++i) entries.erase(by_age[i].second);
        }
        const nlohmann::json file = {{"format", kFormat}, {"entries", entries}};
        write_atomically(path, [&](const std::string& tmp) {
            std::ofstream out(tmp);
            out << file.dump(1) << "\n";
            if (!out.flush()) throw std::runtime_error(tmp + ": cannot write");
        });
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

std::string build_identity() {
    // Once per process: the code running is the one loaded, whatever is
    // rebuilt meanwhile, and each tuning asks.
    static const std::string identity = [] {
        Dl_info info{};
        struct stat st{};
        // The main program's name as dladdr gives it may be relative to a
        // folder since left; /proc/self/exe is the same file then.
        const bool found = (::dladdr(reinterpret_cast<void*>(&build_identity), &info) && info.dli_fname &&
                            *info.dli_fname && ::stat(info.dli_fname, &st) == 0) ||
                           ::stat("/proc/self/exe", &st) == 0;
        if (!found) return std::string();
        return std::string(STACKALIGN_VERSION) + " " + std::to_string(st.st_size) + " " +
               std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    }();
    return identity;
}

}  // namespace stackalign
