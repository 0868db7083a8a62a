#include "output_files.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
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

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
    const fs::path p(path);
    const std::string tmp = (p.parent_path() / ("." + p.filename().string() + ".partial-" + std::to_string(getpid()))).string();
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

namespace {
std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}
}  // namespace

std::string shifts_csv(const std::vector<FrameResult>& frames) {
    auto num = [](const char* f, double v) { return std::isfinite(v) ? fmt(f, v) : std::string(); };
    std::string out = "frame,dx,dy,neighbour_dx,neighbour_dy,mi,sharpness,tilt,status\n";
    for (std::size_t k = 0; k < frames.size(); ++k) {
        const FrameResult& f = frames[k];
        out += std::to_string(k) + "," + fmt("%.4f", f.offset.dx) + "," + fmt("%.4f", f.offset.dy) + "," +
               num("%.4f", f.neighbour.dx) + "," + num("%.4f", f.neighbour.dy) + "," + num("%.6f", f.mi) + "," +
               num("%.3f", f.sharpness) + "," + num("%.2f", f.tilt) + "," + f.status + "\n";
    }
    return out;
}

std::string xf_line(double a11, double a12, double a21, double a22, double dx, double dy) {
    char buf[128];
    // Avoid printing "-0.000" for values that round to zero.
    auto z = [](double v, double q) { return std::fabs(v) < q ? 0.0 : v; };
    std::snprintf(buf, sizeof buf, "%12.7f%12.7f%12.7f%12.7f%12.3f%12.3f\n", z(a11, 5e-8), z(a12, 5e-8), z(a21, 5e-8),
                  z(a22, 5e-8), z(dx, 5e-4), z(dy, 5e-4));
    return buf;
}

std::string imod_xf(const std::vector<FrameResult>& frames) {
    std::string out;
    for (const FrameResult& f : frames) out += xf_line(1, 0, 0, 1, -f.offset.dx, -f.offset.dy);
    return out;
}

std::string imod_prexf(const std::vector<FrameResult>& frames) {
    std::string out;
    for (std::size_t k = 0; k < frames.size(); ++k) {
        const Shift d = k ? Shift{frames[k].offset.dx - frames[k - 1].offset.dx, frames[k].offset.dy - frames[k - 1].offset.dy}
                          : Shift{};
        out += xf_line(1, 0, 0, 1, -d.dx, -d.dy);
    }
    return out;
}

}  // namespace stackalign
