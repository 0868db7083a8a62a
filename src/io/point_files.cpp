#include "point_files.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "../core/error.hpp"

namespace stackalign {
namespace {

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

std::vector<std::string> split_csv(const std::string& line) {
    std::vector<std::string> out;
    std::string cur;
    bool quoted = false, was_quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cur += '"', ++i;
            else if (c == '"') quoted = false;
            else cur += c;
        } else if (c == '"') {
            quoted = was_quoted = true;
        } else if (c == ',') {
            out.push_back(was_quoted ? cur : trim(cur));
            cur.clear();
            was_quoted = false;
        } else {
            cur += c;
        }
    }
    out.push_back(was_quoted ? cur : trim(cur));
    return out;
}

std::string default_point_name(std::size_t i) { return "Pt-" + std::to_string(i); }

namespace {

struct Lines {
    std::vector<std::string> text;  // without line ends
    explicit Lines(const std::string& s) {
        std::istringstream in(s);
        std::string l;
        while (std::getline(in, l)) {
            if (!l.empty() && l.back() == '\r') l.pop_back();
            text.push_back(l);
        }
    }
};

[[noreturn]] void bad(const std::string& path, std::size_t line, const std::string& what) {
    throw InputError(path + ":" + std::to_string(line + 1) + ": " + what);
}

double number(const std::string& field, const std::string& path, std::size_t line, const std::string& what) {
    const std::string f = trim(field);
    char* end = nullptr;
    const double v = std::strtod(f.c_str(), &end);
    if (f.empty() || end != f.c_str() + f.size() || !std::isfinite(v))
        bad(path, line, what + ": expected a number, got \"" + f + "\"");
    return v;
}

std::vector<NamedPoint> parse_csv(const Lines& l, const std::string& path) {
    std::size_t first = 0;
    while (first < l.text.size() && trim(l.text[first]).empty()) ++first;
    if (first == l.text.size()) throw InputError(path + ": no points (empty file)");
    const std::vector<std::string> header = split_csv(l.text[first]);
    int col[4] = {-1, -1, -1, -1};  // x, y, z, name
    const char* names[4] = {"x", "y", "z", "name"};
    for (std::size_t i = 0; i < header.size(); ++i)
        for (int k = 0; k < 4; ++k)
            if (lower(trim(header[i])) == names[k]) col[k] = int(i);
    if (col[0] < 0 || col[1] < 0 || col[2] < 0)
        bad(path, first, "expected a header naming the columns x,y,z (and optionally name), got \"" + l.text[first] + "\"");
    std::vector<NamedPoint> pts;
    for (std::size_t n = first + 1; n < l.text.size(); ++n) {
        if (trim(l.text[n]).empty() || trim(l.text[n])[0] == '#') continue;
        const std::vector<std::string> f = split_csv(l.text[n]);
        if (f.size() != header.size())
            bad(path, n, "expected " + std::to_string(header.size()) + " fields as in the header, got " + std::to_string(f.size()));
        NamedPoint p;
        for (int k = 0; k < 3; ++k) p.p[k] = number(f[col[k]], path, n, names[k]);
        p.name = col[3] >= 0 && !f[col[3]].empty() ? f[col[3]] : default_point_name(pts.size());
        pts.push_back(p);
    }
    return pts;
}

// BigWarp rows: name, active, moving xyz, fixed xyz (3D) -> moving (set 1) or fixed (set 2).
std::vector<NamedPoint> parse_bigwarp(const Lines& l, const std::string& path, int set) {
    std::vector<NamedPoint> pts;
    for (std::size_t n = 0; n < l.text.size(); ++n) {
        if (trim(l.text[n]).empty()) continue;
        const std::vector<std::string> f = split_csv(l.text[n]);
        if (f.size() != 8)
            bad(path, n, "BigWarp landmark rows have 8 fields (\"name\",\"active\",mx,my,mz,fx,fy,fz), got " +
                             std::to_string(f.size()) + (f.size() == 6 ? " (a 2D BigWarp file?)" : ""));
        NamedPoint p;
        p.name = f[0];
        const char* axis[3] = {"x", "y", "z"};
        for (int k = 0; k < 3; ++k)
            p.p[k] = number(f[2 + 3 * (set - 1) + k], path, n, std::string(set == 1 ? "moving " : "fixed ") + axis[k]);
        pts.push_back(p);
    }
    if (pts.empty()) throw InputError(path + ": no points (empty file)");
    return pts;
}

// AmiraMesh landmark sets: "define Markers N", "@1" and "@2" data sections.
std::vector<Point3> parse_amira(const Lines& l, const std::string& path, int set) {
    long count = -1;
    int sets = 1;
    std::size_t data = l.text.size();
    const std::string tag = "@" + std::to_string(set);
    for (std::size_t n = 0; n < l.text.size(); ++n) {
        const std::string t = trim(l.text[n]);
        if (t.rfind("define Markers", 0) == 0) {
            char* end = nullptr;
            count = std::strtol(t.c_str() + 14, &end, 10);
            if (count < 0 || trim(end).size()) bad(path, n, "expected \"define Markers N\", got \"" + t + "\"");
        } else if (t.find("NumSets") != std::string::npos) {
            sets = std::atoi(t.c_str() + t.find("NumSets") + 7);
        } else if (t == tag) {
            data = n + 1;
            break;
        }
    }
    if (count < 0) throw InputError(path + ": not a landmark file: no \"define Markers N\" line");
    if (set > sets) return {};
    if (data == l.text.size()) throw InputError(path + ": no data section " + tag + " for set " + std::to_string(set));
    std::vector<Point3> pts;
    for (std::size_t n = data; long(pts.size()) < count; ++n) {
        if (n >= l.text.size())
            throw InputError(path + ": data section " + tag + " ends after " + std::to_string(pts.size()) + " of " +
                             std::to_string(count) + " markers");
        const std::string t = trim(l.text[n]);
        if (t.empty()) continue;
        std::istringstream in(t);
        std::string a, b, c, extra;
        in >> a >> b >> c;
        if (c.empty() || (in >> extra)) bad(path, n, "expected three coordinates \"x y z\", got \"" + t + "\"");
        pts.push_back({number(a, path, n, "x"), number(b, path, n, "y"), number(c, path, n, "z")});
    }
    return pts;
}

bool has_suffix(const std::string& s, const std::string& suf) {
    return s.size() >= suf.size() && lower(s.substr(s.size() - suf.size())) == suf;
}

}  // namespace

std::string to_string(PointFormat f) {
    switch (f) {
        case PointFormat::amira: return "Amira landmarkAscii";
        case PointFormat::bigwarp: return "BigWarp landmarks CSV";
        default: return "CSV";
    }
}

PointFormat detect_point_format(const std::string& text, const std::string& path) {
    const Lines l(text);
    std::string first;
    for (const std::string& t : l.text)
        if (!trim(t).empty()) {
            first = trim(t);
            break;
        }
    if (first.rfind("# AmiraMesh", 0) == 0) return PointFormat::amira;
    if (has_suffix(path, ".landmarkascii") || has_suffix(path, ".am"))
        throw InputError(path + ":1: an Amira landmark file must start with \"# AmiraMesh 3D ASCII 2.0\"");
    const std::vector<std::string> f = split_csv(first);
    const bool active_flag = f.size() >= 2 && (lower(f[1]) == "true" || lower(f[1]) == "false");
    if (!first.empty() && first[0] == '"' && active_flag) return PointFormat::bigwarp;
    return PointFormat::csv;
}

std::vector<NamedPoint> parse_points(const std::string& text, const std::string& path) {
    const Lines l(text);
    switch (detect_point_format(text, path)) {
        case PointFormat::amira: {
            std::vector<NamedPoint> out;
            for (const Point3& p : parse_amira(l, path, 1)) out.push_back({default_point_name(out.size()), p});
            if (out.empty()) throw InputError(path + ": no points (define Markers 0)");
            return out;
        }
        case PointFormat::bigwarp: return parse_bigwarp(l, path, 1);
        default: return parse_csv(l, path);
    }
}

std::vector<Point3> parse_second_set(const std::string& text, const std::string& path) {
    const Lines l(text);
    std::vector<Point3> out;
    switch (detect_point_format(text, path)) {
        case PointFormat::amira: return parse_amira(l, path, 2);
        case PointFormat::bigwarp:
            for (const NamedPoint& p : parse_bigwarp(l, path, 2)) out.push_back(p.p);
            return out;
        default: return out;
    }
}

std::vector<NamedPoint> read_points(const std::string& path, PointFormat* format) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path + ": cannot open point file");
    std::ostringstream s;
    s << in.rdbuf();
    if (format) *format = detect_point_format(s.str(), path);
    return parse_points(s.str(), path);
}

std::string format_number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6f", v);
    std::string s = buf;
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s == "-0" ? "0" : s;
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string amira_landmarks(const std::vector<Point3>& set1, const std::vector<Point3>& set2) {
    const bool paired = !set2.empty();
    std::ostringstream o;
    o << "# AmiraMesh 3D ASCII 2.0\n\n\ndefine Markers " << set1.size() << "\n\nParameters {\n    NumSets "
      << (paired ? 2 : 1) << ",\n    ContentType \"LandmarkSet\"\n}\n\nMarkers { float[3] Coordinates } @1\n";
    if (paired) o << "Markers { float[3] Coordinates2 } @2\n";
    o << "\n# Data section follows\n";
    for (int s = 1; s <= (paired ? 2 : 1); ++s) {
        o << "@" << s << "\n";
        for (const Point3& p : s == 1 ? set1 : set2)
            o << format_number(p[0]) << " " << format_number(p[1]) << " " << format_number(p[2]) << "\n";
        o << "\n";
    }
    return o.str();
}

std::string bigwarp_csv(const std::vector<std::string>& names, const std::vector<bool>& active,
                        const std::vector<Point3>& moving, const std::vector<Point3>& fixed) {
    std::ostringstream o;
    auto q = [](const std::string& s) {
        std::string r = "\"";
        for (char c : s) r += c == '"' ? std::string("\"\"") : std::string(1, c);
        return r + "\"";
    };
    for (std::size_t i = 0; i < moving.size(); ++i) {
        o << q(names[i]) << "," << q(active[i] ? "true" : "false");
        for (const Point3* p : {&moving[i], &fixed[i]})
            for (double v : *p) o << "," << q(format_number(v));
        o << "\n";
    }
    return o.str();
}

std::string points_csv(const std::vector<NamedPoint>& points) {
    std::ostringstream o;
    o << "name,x,y,z\n";
    for (const NamedPoint& p : points)
        o << csv_field(p.name) << "," << format_number(p.p[0]) << "," << format_number(p.p[1]) << ","
          << format_number(p.p[2]) << "\n";
    return o.str();
}

}  // namespace stackalign
