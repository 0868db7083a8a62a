#include "mdoc.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../core/error.hpp"

namespace fs = std::filesystem;

namespace stackalign {

namespace {

std::string trimmed(const std::string& s) {
    std::size_t a = 0, b = s.size();
    while (a < b && std::isspace((unsigned char)s[a])) ++a;
    while (b > a && std::isspace((unsigned char)s[b - 1])) --b;
    return s.substr(a, b - a);
}

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower((unsigned char)c));
    return s;
}

double number(const std::string& value, const std::string& where, const std::string& key) {
    const std::string v = trimmed(value);
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || end == v.c_str()) throw InputError(where + ": " + key + " = '" + v + "' is not a number");
    return d;
}

}  // namespace

std::vector<double> Mdoc::tilts() const {
    std::vector<double> out;
    for (const MdocView& v : views) out.push_back(v.tilt);
    return out;
}

Mdoc parse_mdoc(const std::string& text, const std::string& path) {
    Mdoc m;
    m.path = path;
    std::map<int, MdocView> sections;
    std::map<int, bool> has_tilt;
    int current = -1, line_no = 0;
    std::istringstream in(text);
    for (std::string raw; std::getline(in, raw);) {
        ++line_no;
        const std::string line = trimmed(raw);  // CR of CRLF included
        const std::string where = path + ":" + std::to_string(line_no);
        if (line.empty()) continue;
        if (line.front() == '[') {
            const auto close = line.rfind(']');
            const std::string inner = trimmed(line.substr(1, close == std::string::npos ? std::string::npos : close - 1));
            const auto eq = inner.find('=');
            const std::string key = lower(trimmed(inner.substr(0, eq)));
            const std::string value = eq == std::string::npos ? "" : inner.substr(eq + 1);
            if (key == "zvalue") {
                const double z = number(value, where, "ZValue");
                if (z < 0 || z != double(int(z))) throw InputError(where + ": ZValue = " + trimmed(value) + " is not a view index (0, 1, ...)");
                current = int(z);
                if (sections.count(current))
                    throw InputError(where + ": ZValue = " + std::to_string(current) + " appears a second time (first at line " +
                                     std::to_string(sections[current].line) + ")");
                sections[current] = MdocView{current, 0, "", line_no};
            } else if (key == "t") {
                const std::string l = lower(value);
                const auto at = l.find("tilt axis angle");
                if (at != std::string::npos) {
                    const auto eq2 = l.find('=', at);
                    if (eq2 != std::string::npos) m.tilt_axis = std::strtod(value.c_str() + eq2 + 1, nullptr);
                }
            } else {
                current = -1;  // another kind of section: its keys are not a view's
            }
            continue;
        }
        const auto eq = line.find('=');
        if (eq == std::string::npos) continue;  // not a key line: SerialEM writes none, others may
        const std::string key = trimmed(line.substr(0, eq)), value = line.substr(eq + 1);
        if (current < 0) {
            if (key == "PixelSpacing") m.pixel_spacing = number(value, where, key);
            if (key == "TiltAxisAngle") m.tilt_axis = number(value, where, key);
            continue;
        }
        if (key == "TiltAngle") {
            sections[current].tilt = number(value, where, key);
            if (std::fabs(sections[current].tilt) > 90)
                throw InputError(where + ": TiltAngle = " + trimmed(value) + " is outside -90..90 degrees");
            has_tilt[current] = true;
        } else if (key == "SubFramePath") {
            sections[current].subframe_path = trimmed(value);
        }
    }
    if (sections.empty()) throw InputError(path + ": no [ZValue = N] section: not a SerialEM .mdoc of a tilt series");
    for (const auto& [z, v] : sections)
        if (!has_tilt.count(z))
            throw InputError(path + ":" + std::to_string(v.line) + ": section ZValue = " + std::to_string(z) +
                             " has no TiltAngle");
    const int n = int(sections.size());
    for (int z = 0; z < n; ++z)
        if (!sections.count(z))
            throw InputError(path + ": ZValue = " + std::to_string(z) + " is missing (the sections run to ZValue = " +
                             std::to_string(sections.rbegin()->first) + "; expected 0 .. " + std::to_string(n - 1) +
                             ", one section per view)");
    for (auto& [z, v] : sections) m.views.push_back(v);
    return m;
}

Mdoc read_mdoc(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open the .mdoc");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_mdoc(text.str(), path);
}

std::vector<std::string> mdoc_view_files(const Mdoc& mdoc) {
    const fs::path folder = fs::path(mdoc.path).parent_path();
    std::vector<std::string> files;
    for (const MdocView& v : mdoc.views) {
        const std::string where = mdoc.path + ":" + std::to_string(v.line) + ": section ZValue = " + std::to_string(v.z);
        if (v.subframe_path.empty())
            throw InputError(where + " has no SubFramePath: files = an .mdoc needs each view's file named there; "
                             "give the views as a glob (files = \"folder/*.tif\") with angles = the .mdoc instead");
        const std::size_t cut = v.subframe_path.find_last_of("/\\");
        const std::string name = cut == std::string::npos ? v.subframe_path : v.subframe_path.substr(cut + 1);
        const fs::path file = folder / name;
        if (!fs::is_regular_file(file))
            throw InputError(where + ": SubFramePath " + v.subframe_path + " is looked for beside the .mdoc as " +
                             file.string() + ", which does not exist");
        files.push_back(file.string());
    }
    return files;
}

bool is_mdoc(const std::string& path) { return lower(fs::path(path).extension().string()) == ".mdoc"; }

std::string mdoc_beside(const std::string& stack) {
    const fs::path p(stack);
    for (const fs::path& candidate : {fs::path(stack + ".mdoc"), p.parent_path() / (p.stem().string() + ".mdoc")})
        if (fs::is_regular_file(candidate)) return candidate.string();
    return "";
}

}  // namespace stackalign
