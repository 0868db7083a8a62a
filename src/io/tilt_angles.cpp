#include "tilt_angles.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../core/error.hpp"

namespace stackalign {

std::vector<double> parse_tilt_angles(const std::string& text, const std::string& path) {
    std::vector<double> out;
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        const auto hash = line.find('#');
        if (hash != std::string::npos) line.erase(hash);
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos) continue;
        const char* start = line.c_str() + first;
        char* end = nullptr;
        const double v = std::strtod(start, &end);
        const bool trailing = std::string(end).find_first_not_of(" \t\r") != std::string::npos;
        if (end == start || trailing || !std::isfinite(v))
            throw InputError(path + ":" + std::to_string(n) + ": expected one tilt angle in degrees per line, got \"" +
                             line.substr(first) + "\"");
        if (std::fabs(v) > 90)
            throw InputError(path + ":" + std::to_string(n) + ": tilt angle " + line.substr(first) +
                             " is outside -90..90 degrees");
        out.push_back(v);
    }
    if (out.empty()) throw InputError(path + ": no tilt angles (empty file)");
    return out;
}

std::vector<double> read_tilt_angles(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open tilt-angle file");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_tilt_angles(text.str(), path);
}

std::vector<double> tilt_range(double start, double step, int count) {
    std::vector<double> out(count);
    for (int i = 0; i < count; ++i) out[i] = start + step * i;
    return out;
}

}  // namespace stackalign
