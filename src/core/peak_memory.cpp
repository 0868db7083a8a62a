#include "peak_memory.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace stackalign {
namespace {

// VmHWM of /proc/self/status in KiB (the mark clear_refs resets), 0 when unreadable.
long long high_water_kib() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
    return 0;
}

}  // namespace

PeakMemory::PeakMemory(bool reset) {
    if (!reset) return;
    // "5": the peak set to what the process holds now (Linux 4.0 on).
    const int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    own_ = write(fd, "5", 1) == 1 && high_water_kib() > 0;
    close(fd);
}

std::uintmax_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? std::uintmax_t(pages) * std::uintmax_t(page) : 0;
}

double PeakMemory::megabytes() const {
    if (own_) return double(high_water_kib()) / 1024.0;
    // getrusage's maximum also keeps the marks of threads that have exited,
    // which no reset clears: the process's peak.
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

}  // namespace stackalign
