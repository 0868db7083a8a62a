#include "fuzz_targets.hpp"

#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "../../src/config/config.hpp"
#include "../../src/core/error.hpp"
#include "../../src/io/mrc_io.hpp"
#include "../../src/io/point_files.hpp"
#include "../../src/io/tiff_io.hpp"

namespace fuzz {

namespace {

// The file readers take paths: the input goes to a per-process file first.
std::string as_file(const std::uint8_t* data, std::size_t size, const char* suffix) {
    const std::string path = "/tmp/stackalign-fuzz-" + std::to_string(getpid()) + suffix;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw std::runtime_error("fuzz: cannot write " + path);
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
    return path;
}

template <typename F>
void expecting_input_errors(F&& f) {
    try {
        f();
    } catch (const stackalign::Error&) {
        // the answer junk deserves: an error that names what is wrong
    }
}

}  // namespace

void tiff(const std::uint8_t* data, std::size_t size) {
    const std::string path = as_file(data, size, ".tif");
    expecting_input_errors([&] { stackalign::probe_tiff(path); });
    expecting_input_errors([&] { stackalign::read_tiff_stack(path); });
    std::remove(path.c_str());
}

void mrc(const std::uint8_t* data, std::size_t size) {
    const std::string path = as_file(data, size, ".mrc");
    expecting_input_errors([&] { stackalign::read_mrc_stack(path); });
    std::remove(path.c_str());
}

void config(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    expecting_input_errors([&] { stackalign::parse_jobs(text, "/tmp/fuzz.toml"); });
}

void points(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    expecting_input_errors([&] { stackalign::parse_points(text, "fuzz.csv"); });
    expecting_input_errors([&] { stackalign::parse_second_set(text, "fuzz.landmarkAscii"); });
}

void run(const std::string& target, const std::uint8_t* data, std::size_t size) {
    if (target == "tiff") tiff(data, size);
    else if (target == "mrc") mrc(data, size);
    else if (target == "config") config(data, size);
    else if (target == "points") points(data, size);
    else throw std::invalid_argument("no fuzz target " + target);
}

}  // namespace fuzz
