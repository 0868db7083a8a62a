#include "atomic_file.hpp"

#include <unistd.h>

#include <filesystem>

#include "error.hpp"

namespace fs = std::filesystem;

namespace stackalign {

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
    const fs::path p(path);
    const std::string name = p.filename().string();
    const std::size_t dot = name.find('.', 1);  // a leading dot is part of the stem
    const std::string stem = name.substr(0, dot), suffixes = dot == std::string::npos ? "" : name.substr(dot);
    const std::string tmp = (p.parent_path() / ("." + stem + ".partial-" + std::to_string(getpid()) + suffixes)).string();
    try {
        write(tmp);
        std::error_code ec;
        fs::rename(tmp, path, ec);
        if (ec) throw OutputError(path + ": cannot move finished file into place: " + ec.message());
    } catch (...) {
        std::error_code ignored;
        fs::remove(tmp, ignored);
        throw;
    }
}

}  // namespace stackalign
