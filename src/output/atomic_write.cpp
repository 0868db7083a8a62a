#include "atomic_write.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../core/error.hpp"

namespace fs = std::filesystem;

namespace stackalign {

void prepare_output_dir(const std::string& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw OutputError(dir + ": cannot create output folder: " + ec.message());
    if (access(dir.c_str(), W_OK) != 0)
        throw OutputError(dir + ": output folder is not writable: " + std::strerror(errno));
}

void write_text_atomically(const std::string& path, const std::string& text) {
    write_atomically(path, [&](const std::string& tmp) {
        std::FILE* f = std::fopen(tmp.c_str(), "wb");
        if (!f) throw OutputError(tmp + ": cannot create: " + std::strerror(errno));
        const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
        const int saved = errno;
        // fclose flushes; a full disk often shows up only here.
        if (std::fclose(f) != 0 || !ok)
            throw OutputError(path + ": write failed: " + std::strerror(ok ? errno : saved));
    });
}

}  // namespace stackalign
