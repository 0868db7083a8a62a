#include "config.hpp"

#include <glob.h>

#include <stdexcept>

// toml++ 3.3 checks some of its parser's expectations with assertions: on
// invalid input (a stray character in a table header, found by `make fuzz`)
// that aborts, or with NDEBUG is undefined behaviour. Its assertions throw
// instead, and parse_toml reports the file as invalid TOML.
namespace stackalign::detail {
struct TomlAssertion : std::logic_error {
    using std::logic_error::logic_error;
};
[[noreturn]] inline void toml_assertion_failed(const char* expr) { throw TomlAssertion(expr); }
}  // namespace stackalign::detail
#define TOML_ASSERT(expr) ((expr) ? static_cast<void>(0) : ::stackalign::detail::toml_assertion_failed(#expr))
#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>
#include <vector>

#include "../core/error.hpp"
#include "../core/natural_sort.hpp"

namespace fs = std::filesystem;

namespace stackalign {

int edit_distance(const std::string& a, const std::string& b) {
    std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = int(j);
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = int(i);
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string Config::where(const std::string& key) const {
    auto it = lines.find(key);
    const std::string line = it == lines.end() ? "" : ":" + std::to_string(it->second);
    const auto dot = key.find('.');
    const std::string pretty = dot == std::string::npos ? key : "[" + key.substr(0, dot) + "] " + key.substr(dot + 1);
    return path + line + ": " + pretty;
}

namespace {

const std::map<std::string, std::set<std::string>> known_keys = {
    {"input", {"stack", "files", "glob", "angles", "allow_gaps"}},
    {"preprocess", {"mean_radius", "sobel", "threshold", "bins"}},
    {"search", {"window", "window_origin", "max_shift", "subpixel", "histogram", "metric", "method", "mtb_band"}},
    {"landmarks", {"source", "target", "points", "window", "max_shift", "voxel_size", "subpixel"}},
    {"alignment", {"reference", "tilt_axis", "cosine_stretch", "exclude", "on_outlier", "min_sharpness", "outlier_z"}},
    {"output", {"dir", "aligned", "fit", "format", "report"}},
    {"device", {"backend", "gpu", "gpus"}},
};
const std::set<std::string> top_level_keys = {"mode", "job"};

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    int best_d = 1 << 30;
    for (const auto& c : candidates) {
        const int d = edit_distance(word, c);
        if (d < best_d) best_d = d, best = c;
    }
    // Only suggest when the typo is plausibly a typo.
    return best_d <= std::max<int>(2, int(word.size()) / 3) ? best : "";
}

class Reader {
public:
    Reader(const toml::table& root, Config& cfg) : root_(root), cfg_(cfg) {}

    int line_of(const toml::node& n) const { return int(n.source().begin.line); }

    [[noreturn]] void fail(const toml::node* n, const std::string& key, const std::string& what) const {
        const std::string line = n ? ":" + std::to_string(line_of(*n)) : "";
        throw ConfigError(cfg_.path + line + ": " + key + ": " + what);
    }

    void check_unknown_keys() {
        std::vector<std::string> all_sections;
        for (const auto& [s, _] : known_keys) all_sections.push_back(s);
        for (const auto& [k, node] : root_) {
            const std::string key(k.str());
            if (top_level_keys.count(key)) continue;
            auto sec = known_keys.find(key);
            if (sec == known_keys.end()) {
                std::string hint = nearest(key, all_sections);
                // A section key written at top level ("bins = 64" above any [section]).
                for (const auto& [s, keys] : known_keys)
                    if (keys.count(key)) hint = "[" + s + "] " + key;
                fail(&node, key, "unknown section or key" + (hint.empty() ? "" : "; did you mean " + hint + "?") +
                                    " (sections: [input] [preprocess] [search] [landmarks] [alignment] [output] [device])");
            }
            if (!node.is_table()) fail(&node, key, "expected a [" + key + "] table");
            for (const auto& [k2, n2] : *node.as_table()) {
                const std::string key2(k2.str());
                if (sec->second.count(key2)) continue;
                std::string hint = nearest(key2, {sec->second.begin(), sec->second.end()});
                for (const auto& [s, keys] : known_keys)
                    if (s != key && keys.count(key2)) hint = "[" + s + "] " + key2;
                std::string valid;
                for (const auto& v : sec->second) valid += (valid.empty() ? "" : ", ") + v;
                fail(&n2, "[" + key + "] " + key2,
                     "unknown key" + (hint.empty() ? "" : "; did you mean " + hint + "?") + " (valid: " + valid + ")");
            }
        }
    }

    const toml::node* get(const std::string& section, const std::string& key) {
        const toml::node* n = section.empty() ? root_.get(key) : root_.at_path(section + "." + key).node();
        if (n) cfg_.lines[section.empty() ? key : section + "." + key] = line_of(*n);
        return n;
    }

    static std::string label(const std::string& section, const std::string& key) {
        return section.empty() ? key : "[" + section + "] " + key;
    }

    std::string type_name(const toml::node& n) const {
        switch (n.type()) {
            case toml::node_type::string: return "a string";
            case toml::node_type::integer: return "an integer";
            case toml::node_type::floating_point: return "a number";
            case toml::node_type::boolean: return "a boolean";
            case toml::node_type::array: return "an array";
            case toml::node_type::table: return "a table";
            default: return "a date/time";
        }
    }

    void read(const std::string& s, const std::string& k, std::string& out) {
        if (const toml::node* n = get(s, k)) {
            if (!n->is_string()) fail(n, label(s, k), "expected a string, got " + type_name(*n));
            out = n->as_string()->get();
        }
    }
    void read(const std::string& s, const std::string& k, bool& out) {
        if (const toml::node* n = get(s, k)) {
            if (!n->is_boolean()) fail(n, label(s, k), "expected true or false, got " + type_name(*n));
            out = n->as_boolean()->get();
        }
    }
    void read(const std::string& s, const std::string& k, int& out, long lo, long hi) {
        if (const toml::node* n = get(s, k)) out = as_int(*n, label(s, k), lo, hi);
    }
    void read(const std::string& s, const std::string& k, double& out, double lo, double hi) {
        if (const toml::node* n = get(s, k)) {
            if (!n->is_number()) fail(n, label(s, k), "expected a number, got " + type_name(*n));
            const double v = n->is_integer() ? double(n->as_integer()->get()) : n->as_floating_point()->get();
            if (!(v >= lo && v <= hi)) {
                std::ostringstream m;
                m << "value " << v << " is out of range; expected " << lo << " to " << hi;
                fail(n, label(s, k), m.str());
            }
            out = v;
        }
    }
    int as_int(const toml::node& n, const std::string& what, long lo, long hi) {
        if (!n.is_integer()) fail(&n, what, "expected an integer, got " + type_name(n));
        const long long v = n.as_integer()->get();
        if (v < lo || v > hi)
            fail(&n, what, "value " + std::to_string(v) + " is out of range; expected " + std::to_string(lo) + " to " +
                               std::to_string(hi));
        return int(v);
    }
    std::pair<int, int> read_pair(const std::string& s, const std::string& k, const toml::node& n, long lo, long hi,
                                  const char* names) {
        const toml::array* a = n.as_array();
        if (!a || a->size() != 2) fail(&n, label(s, k), std::string("expected an array of two integers ") + names);
        return {as_int(*a->get(0), label(s, k) + "[0]", lo, hi), as_int(*a->get(1), label(s, k) + "[1]", lo, hi)};
    }
    template <typename T>
    std::array<T, 3> read_triple(const std::string& s, const std::string& k, const toml::node& n, double lo, double hi,
                                 const char* names) {
        const toml::array* a = n.as_array();
        const char* kind = std::is_integral_v<T> ? "integers " : "numbers ";
        if (!a || a->size() != 3) fail(&n, label(s, k), std::string("expected an array of three ") + kind + names);
        std::array<T, 3> out{};
        for (int i = 0; i < 3; ++i) {
            const toml::node& e = *a->get(i);
            const std::string what = label(s, k) + "[" + std::to_string(i) + "]";
            if constexpr (std::is_integral_v<T>) {
                out[i] = as_int(e, what, long(lo), long(hi));
            } else {
                if (!e.is_number()) fail(&e, what, "expected a number, got " + type_name(e));
                out[i] = e.is_integer() ? double(e.as_integer()->get()) : e.as_floating_point()->get();
                if (!(out[i] >= lo && out[i] <= hi)) {
                    std::ostringstream m;
                    m << "value " << out[i] << " is out of range; expected " << lo << " to " << hi;
                    fail(&e, what, m.str());
                }
            }
        }
        return out;
    }
    // Keys that belong to the other mode are mistakes, not silently ignored.
    void forbid(const std::string& s, const std::string& k, const std::string& why) {
        if (const toml::node* n = get(s, k)) fail(n, label(s, k), why);
    }
    // `meant` maps words users write for a valid value ("gpu" -> "cuda") when
    // spelling alone would suggest the wrong one.
    void one_of(const std::string& s, const std::string& k, const std::string& v, const std::vector<std::string>& ok,
                const std::map<std::string, std::string>& meant = {}) {
        if (std::find(ok.begin(), ok.end(), v) != ok.end()) return;
        std::string list;
        for (const auto& o : ok) list += (list.empty() ? "\"" : ", \"") + o + "\"";
        const auto m = meant.find(v);
        const std::string hint = m != meant.end() ? m->second : nearest(v, ok);
        fail(get(s, k), label(s, k),
             "\"" + v + "\" is not valid; expected one of " + list + (hint.empty() ? "" : " (did you mean \"" + hint + "\"?)"));
    }

private:
    const toml::table& root_;
    Config& cfg_;
};

void read_landmarks(Reader& r, Config& cfg) {
    LandmarksConfig& l = cfg.landmarks;
    r.read("landmarks", "source", l.source);
    r.read("landmarks", "target", l.target);
    r.read("landmarks", "points", l.points);
    for (auto [key, value] : {std::pair<const char*, std::string*>{"source", &l.source}, {"target", &l.target},
                              {"points", &l.points}})
        if (value->empty())
            throw ConfigError(cfg.path + ": [landmarks] " + key + ": required with mode = \"landmarks\" (" +
                              (std::string(key) == "points" ? "a CSV, .landmarkAscii or BigWarp CSV file of source points"
                                                            : "a multi-page TIFF volume, pages = z") + ")");
    if (const toml::node* n = r.get("landmarks", "window"))
        l.window = r.read_triple<int>("landmarks", "window", *n, 1, 4096, "[x, y, z]");
    if (const toml::node* n = r.get("landmarks", "max_shift"))
        l.max_shift = r.read_triple<int>("landmarks", "max_shift", *n, 0, 1024, "[x, y, z]");
    if (const toml::node* n = r.get("landmarks", "voxel_size"))
        l.voxel_size = r.read_triple<double>("landmarks", "voxel_size", *n, 1e-9, 1e9, "[x, y, z]");
    r.read("landmarks", "subpixel", l.subpixel);
}

// [input] angles and the [alignment] keys of stack mode.
void read_tilt_settings(Reader& r, Config& cfg) {
    if (const toml::node* n = r.get("input", "angles")) {
        if (n->is_string()) {
            cfg.input.angles_file = n->as_string()->get();
            if (cfg.input.angles_file.empty()) r.fail(n, "[input] angles", "must not be empty");
        } else if (const toml::table* t = n->as_table()) {
            std::array<double, 2> range{};
            const char* names[2] = {"start", "step"};
            for (const auto& [k, v] : *t)
                if (k.str() != "start" && k.str() != "step")
                    r.fail(&v, "[input] angles." + std::string(k.str()), "unknown key (valid: start, step)");
            for (int i = 0; i < 2; ++i) {
                const toml::node* e = t->get(names[i]);
                if (!e || !e->is_number())
                    r.fail(n, "[input] angles", std::string("expected {start = <degrees>, step = <degrees>}; ") +
                                                    names[i] + " is " + (e ? "not a number" : "missing"));
                range[i] = e->is_integer() ? double(e->as_integer()->get()) : e->as_floating_point()->get();
            }
            cfg.input.angles_range = range;
        } else {
            r.fail(n, "[input] angles", "expected a tilt-angle file (\"x.tlt\") or {start = -60, step = 2}, got " +
                                            r.type_name(*n));
        }
    }
    AlignmentConfig& a = cfg.alignment;
    if (const toml::node* n = r.get("alignment", "reference")) {
        if (n->is_string()) {
            if (n->as_string()->get() != "middle")
                r.fail(n, "[alignment] reference", "expected \"middle\" or a 0-based frame index, got \"" +
                                                      n->as_string()->get() + "\"");
            a.reference_middle = true;
        } else {
            a.reference = r.as_int(*n, "[alignment] reference", 0, 1 << 30);
        }
    }
    r.read("alignment", "tilt_axis", a.tilt_axis, -360.0, 360.0);
    r.read("alignment", "cosine_stretch", a.cosine_stretch);
    if (const toml::node* n = r.get("alignment", "exclude")) {
        const toml::array* arr = n->as_array();
        if (!arr) r.fail(n, "[alignment] exclude", "expected an array of 0-based view indices, got " + r.type_name(*n));
        for (std::size_t i = 0; i < arr->size(); ++i)
            a.exclude.push_back(r.as_int(*arr->get(i), "[alignment] exclude[" + std::to_string(i) + "]", 0, 1 << 30));
    }
    r.read("alignment", "on_outlier", a.on_outlier);
    r.one_of("alignment", "on_outlier", a.on_outlier, {"keep", "interpolate"});
    r.read("alignment", "min_sharpness", a.min_sharpness, 0.0, 1e6);
    r.read("alignment", "outlier_z", a.outlier_z, 0.5, 1e6);
}

std::string resolve(const std::string& base_dir, const std::string& p) {
    if (p.empty() || fs::path(p).is_absolute()) return p;
    return (fs::path(base_dir) / p).lexically_normal().string();
}

}  // namespace

namespace {

// What toml++ 3.3 mishandles instead of reporting (found by `make fuzz`):
// control characters (TOML allows none but tab; some abort the parser), and
// non-ASCII characters wherever it tests for whitespace (its test reaches
// __builtin_unreachable on U+00A1..U+0499: undefined behaviour). So the
// parser only ever sees ASCII outside comments: control characters and
// non-ASCII outside strings are errors with their place, and non-ASCII in a
// double-quoted string is rewritten as the equivalent \uXXXX escape (the
// same string to TOML). Literal ('...') strings cannot hold escapes, so
// non-ASCII there is an error that says to use double quotes.
std::string ascii_toml(const std::string& text, const std::string& path) {
    enum { plain, comment, basic, literal, ml_basic, ml_literal } state = plain;
    std::string out;
    out.reserve(text.size());
    int line = 1, column = 0;
    auto fail = [&](const std::string& what) {
        throw ConfigError(path + ":" + std::to_string(line) + ":" + std::to_string(column) + ": TOML syntax error: " + what);
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        ++column;
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", c);
            fail(std::string("control character ") + hex + " (is this a text file?)");
        }
        if (c >= 0x80) {
            if (state == comment) {
                out += char(c);
                continue;
            }
            if (state == plain) fail("a non-ASCII character outside a quoted string or comment (keys must be ASCII or quoted)");
            if (state == literal || state == ml_literal)
                fail("a non-ASCII character in a 'literal' string; write it in a \"double-quoted\" string");
            // One UTF-8 sequence -> \uXXXX or \UXXXXXXXX.
            const int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
            if (extra < 0 || c > 0xF4 || i + extra >= text.size()) fail("invalid UTF-8 (is the file UTF-8 text?)");
            std::uint32_t cp = c & (0x3F >> extra);
            for (int k = 1; k <= extra; ++k) {
                const unsigned char d = static_cast<unsigned char>(text[i + k]);
                if ((d & 0xC0) != 0x80) fail("invalid UTF-8 (is the file UTF-8 text?)");
                cp = (cp << 6) | (d & 0x3F);
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid UTF-8 (is the file UTF-8 text?)");
            char esc[16];
            std::snprintf(esc, sizeof esc, cp > 0xFFFF ? "\\U%08X" : "\\u%04X", unsigned(cp));
            out += esc;
            i += extra;
            continue;
        }
        out += char(c);
        const auto starts = [&](const char* s3) { return text.compare(i, 3, s3) == 0; };
        switch (state) {
            case plain:
                if (c == '#') state = comment;
                else if (starts("\"\"\"")) state = ml_basic, out += "\"\"", i += 2, column += 2;
                else if (starts("'''")) state = ml_literal, out += "''", i += 2, column += 2;
                else if (c == '"') state = basic;
                else if (c == '\'') state = literal;
                break;
            case comment:
                if (c == '\n') state = plain;
                break;
            case basic:
            case ml_basic:
                if (c == '\\' && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80)
                    fail("a backslash before a non-ASCII character is not a TOML escape");
                if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n')
                    out += text[++i], ++column;  // an escape: the next character is not a delimiter
                else if (state == basic && (c == '"' || c == '\n')) state = plain;
                else if (state == ml_basic && starts("\"\"\"")) state = plain, out += "\"\"", i += 2, column += 2;
                break;
            case literal:
                if (c == '\'' || c == '\n') state = plain;
                break;
            case ml_literal:
                if (starts("'''")) state = plain, out += "''", i += 2, column += 2;
                break;
        }
        if (c == '\n') ++line, column = 0;
    }
    return out;
}

toml::table parse_toml(const std::string& raw, const std::string& path) {
    const std::string text = ascii_toml(raw, path);
    try {
        return toml::parse(text, path);
    } catch (const detail::TomlAssertion&) {
        throw ConfigError(path + ": TOML syntax error: not valid TOML (a table header or key holds a character TOML "
                          "does not allow; the parser could not say where)");
    } catch (const toml::parse_error& e) {
        throw ConfigError(path + ":" + std::to_string(e.source().begin.line) + ":" +
                          std::to_string(e.source().begin.column) + ": TOML syntax error: " + std::string(e.description()));
    }
}

Config config_from_table(const toml::table& root, const std::string& path);

}  // namespace

Config parse_config(const std::string& text, const std::string& path) {
    return config_from_table(parse_toml(text, path), path);
}

namespace {

Config config_from_table(const toml::table& root, const std::string& path) {
    Config cfg;
    cfg.path = path;
    if (const toml::node* j = root.get("job"))
        throw ConfigError(path + ":" + std::to_string(j->source().begin.line) +
                          ": [[job]]: this file holds several jobs; run it with `stackalign run` (load_jobs)");
    std::ostringstream canonical;
    canonical << root;
    cfg.canonical = canonical.str();
    Reader r(root, cfg);
    r.check_unknown_keys();

    r.read("", "mode", cfg.mode);
    r.one_of("", "mode", cfg.mode, {"stack", "landmarks"});
    const bool landmarks = cfg.mode == "landmarks";

    if (landmarks) {
        const std::string why = "not used with mode = \"landmarks\"; landmark runs are set up in [landmarks]";
        for (const auto& k : known_keys.at("input")) r.forbid("input", k, why);
        for (const char* k : {"window", "window_origin", "max_shift", "subpixel"}) r.forbid("search", k, why);
        for (const auto& k : known_keys.at("alignment")) r.forbid("alignment", k, why);
        for (const char* k : {"aligned", "format", "report"})
            r.forbid("output", k, "not used with mode = \"landmarks\" (no aligned stack is written)");
        read_landmarks(r, cfg);
    } else {
        const std::string why = "only used with mode = \"landmarks\" (this config has mode = \"stack\")";
        for (const auto& k : known_keys.at("landmarks")) r.forbid("landmarks", k, why);
        r.forbid("output", "fit", why);
        r.read("input", "stack", cfg.input.stack);
        r.read("input", "files", cfg.input.files);
        r.read("input", "glob", cfg.input.glob);
        r.read("input", "allow_gaps", cfg.input.allow_gaps);
        if (!cfg.input.stack.empty() + !cfg.input.files.empty() + !cfg.input.glob.empty() != 1)
            throw ConfigError(path + ": [input]: give exactly one of stack = \"file.tif\" (multi-page TIFF or MRC "
                              "stack), files = \"folder/*.tif\" (one TIFF per frame) or glob = \"data/*/*.tif\" "
                              "(one job per stack)");
        read_tilt_settings(r, cfg);
    }

    r.read("preprocess", "mean_radius", cfg.preprocess.mean_radius, 0, 15);
    r.read("preprocess", "sobel", cfg.preprocess.sobel);
    r.read("preprocess", "threshold", cfg.preprocess.threshold, 0.0, 1e6);
    r.read("preprocess", "bins", cfg.preprocess.bins, 2, 256);

    if (const toml::node* n = r.get("search", "window")) {
        auto [w, h] = r.read_pair("search", "window", *n, 1, 1 << 20, "[width, height]");
        cfg.search.window_width = w;
        cfg.search.window_height = h;
    }
    if (const toml::node* n = r.get("search", "window_origin")) {
        auto [x, y] = r.read_pair("search", "window_origin", *n, 0, 1 << 20, "[x, y]");
        cfg.search.origin_x = x;
        cfg.search.origin_y = y;
        if (cfg.search.window_width == 0)
            throw ConfigError(cfg.where("search.window_origin") + ": needs [search] window = [width, height] as well");
    }
    r.read("search", "max_shift", cfg.search.max_shift, 0, 4096);
    r.read("search", "subpixel", cfg.search.subpixel);
    r.read("search", "method", cfg.search.method);
    r.one_of("search", "method", cfg.search.method, {"window", "mtb-projection"});
    if (cfg.search.method == "mtb-projection") {
        if (landmarks)
            throw ConfigError(cfg.where("search.method") + ": \"mtb-projection\" aligns 2D frames; landmark "
                              "matching in volumes needs method = \"window\"");
        const std::string why = "not used with method = \"mtb-projection\" (it thresholds the raw frames at their "
                                "median and compares row/column projections; no histogram, no metric)";
        r.forbid("search", "histogram", why);
        r.forbid("search", "metric", why);
        for (const auto& k : known_keys.at("preprocess")) r.forbid("preprocess", k, why);
    } else {
        r.forbid("search", "mtb_band", "only used with method = \"mtb-projection\"");
    }
    r.read("search", "mtb_band", cfg.search.mtb_band, 0, 49);
    r.read("search", "histogram", cfg.search.histogram);
    r.one_of("search", "histogram", cfg.search.histogram,
             {"auto", "zero-slot", "shared", "replicated", "adaptive", "bin-partitioned", "bin-partitioned-sampled",
              "presorted", "cr-atomic"});
    r.read("search", "metric", cfg.search.metric);
    r.one_of("search", "metric", cfg.search.metric, {"mi", "nmi", "ncc", "cr"});
    if ((cfg.search.histogram == "presorted" || cfg.search.histogram == "cr-atomic") && cfg.search.metric != "cr")
        throw ConfigError(cfg.where("search.histogram") + ": \"" + cfg.search.histogram +
                          "\" computes the correlation ratio only; set [search] metric = \"cr\" (it is \"" +
                          cfg.search.metric + "\")");


    r.read("output", "dir", cfg.output.dir);
    if (cfg.output.dir.empty()) throw ConfigError(cfg.where("output.dir") + ": must not be empty");
    r.read("output", "aligned", cfg.output.aligned);
    r.read("output", "fit", cfg.output.fit);
    r.one_of("output", "fit", cfg.output.fit, {"none", "rigid", "affine"});
    r.read("output", "format", cfg.output.format);
    r.one_of("output", "format", cfg.output.format, {"auto", "tiff", "mrc"}, {{"tif", "tiff"}, {"st", "mrc"}, {"ali", "mrc"}});
    r.read("output", "report", cfg.output.report);

    r.read("device", "backend", cfg.device.backend);
    r.one_of("device", "backend", cfg.device.backend, {"auto", "cpu", "cuda"}, {{"gpu", "cuda"}, {"GPU", "cuda"}});
    r.read("device", "gpu", cfg.device.gpu, 0, 1024);
    if (const toml::node* n = r.get("device", "gpus")) {
        if (n->is_string() && n->as_string()->get() == "all") {
            cfg.device.gpus = {-1};
        } else if (const toml::array* a = n->as_array(); a && !a->empty()) {
            for (std::size_t i = 0; i < a->size(); ++i)
                cfg.device.gpus.push_back(r.as_int(*a->get(i), "[device] gpus[" + std::to_string(i) + "]", 0, 1024));
        } else {
            r.fail(n, "[device] gpus", "expected \"all\" or a list of GPU indices such as [0, 1]");
        }
    }

    const std::string base = fs::path(path).parent_path().string();
    cfg.input.stack = resolve(base, cfg.input.stack);
    cfg.input.files = resolve(base, cfg.input.files);
    cfg.input.glob = resolve(base, cfg.input.glob);
    cfg.input.angles_file = resolve(base, cfg.input.angles_file);
    cfg.output.dir = resolve(base, cfg.output.dir);
    for (std::string* p : {&cfg.landmarks.source, &cfg.landmarks.target, &cfg.landmarks.points}) *p = resolve(base, *p);
    return cfg;
}

}  // namespace

namespace {
std::string read_config_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path + ": cannot open config file");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}
}  // namespace

Config load_config(const std::string& path) { return parse_config(read_config_text(path), path); }


namespace {

std::string line_of(const toml::node& n) { return std::to_string(n.source().begin.line); }

// One [[job]] table over the top-level sections: the job's keys win.
toml::table merge_job(const toml::table& root, const toml::table& job, const std::string& path, std::string& name) {
    toml::table merged = root;
    merged.erase("job");
    for (const auto& [k, v] : job) {
        const std::string key(k.str());
        if (key == "name") {
            if (!v.is_string()) throw ConfigError(path + ":" + line_of(v) + ": [[job]] name: expected a string");
            name = v.as_string()->get();
            continue;
        }
        if (key == "mode") {
            merged.insert_or_assign("mode", v);
            continue;
        }
        const toml::table* section = v.as_table();
        if (!section)
            throw ConfigError(path + ":" + line_of(v) + ": [[job]] " + key +
                              ": expected a section such as [job.input] or job.input = {stack = \"...\"}");
        toml::table* into = merged.get_as<toml::table>(key);
        if (!into) {
            merged.insert_or_assign(key, *section);
            continue;
        }
        for (const auto& [k2, v2] : *section) into->insert_or_assign(k2, v2);
    }
    return merged;
}

std::string stem_of(const std::string& p) { return fs::path(p).stem().string(); }

}  // namespace

Batch parse_jobs(const std::string& text, const std::string& path) {
    const toml::table root = parse_toml(text, path);
    Batch batch;
    std::vector<Job> jobs;
    if (const toml::node* node = root.get("job")) {
        const toml::array* list = node->as_array();
        if (!list || list->empty() || !list->is_array_of_tables())
            throw ConfigError(path + ":" + line_of(*node) + ": job: expected [[job]] tables, one per job");
        batch.is_batch = true;
        for (std::size_t i = 0; i < list->size(); ++i) {
            std::string name;
            const toml::table merged = merge_job(root, *list->get(i)->as_table(), path, name);
            Config cfg = config_from_table(merged, path);
            jobs.push_back({name, std::move(cfg)});
        }
        toml::table top = root;
        top.erase("job");
        const auto* out = top.get_as<toml::table>("output");
        const std::string dir = out && out->get_as<std::string>("dir") ? out->get_as<std::string>("dir")->get() : "out";
        batch.summary_dir = (fs::path(path).parent_path() / dir).lexically_normal().string();
    } else {
        Config cfg = config_from_table(root, path);
        batch.summary_dir = cfg.output.dir;
        jobs.push_back({"", std::move(cfg)});
    }

    // [input] glob: one job per stack, output in <dir>/<stack name>.
    for (Job& job : jobs) {
        if (job.config.input.glob.empty()) {
            batch.jobs.push_back(std::move(job));
            continue;
        }
        batch.is_batch = true;
        glob_t g{};
        const int rc = ::glob(job.config.input.glob.c_str(), 0, nullptr, &g);
        std::vector<std::string> files;
        for (std::size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) files.push_back(g.gl_pathv[i]);
        globfree(&g);
        if (files.empty())
            throw ConfigError(job.config.where("input.glob") + ": no file matches \"" + job.config.input.glob + "\"");
        natural_sort(files);
        for (const std::string& f : files) {
            Job one{job.name.empty() ? stem_of(f) : job.name + "/" + stem_of(f), job.config};
            one.config.input.glob.clear();
            one.config.input.stack = f;
            one.config.output.dir = (fs::path(job.config.output.dir) / stem_of(f)).string();
            one.config.canonical += "\n# stack: " + f + "\n";
            batch.jobs.push_back(std::move(one));
        }
    }
    for (std::size_t i = 0; i < batch.jobs.size(); ++i) {
        Job& job = batch.jobs[i];
        if (job.name.empty()) {
            const std::string& in = job.config.mode == "landmarks" ? job.config.landmarks.points
                                    : job.config.input.stack.empty() ? job.config.input.files : job.config.input.stack;
            job.name = batch.is_batch ? "job " + std::to_string(i + 1) + " (" + stem_of(in) + ")" : stem_of(in);
        }
        for (std::size_t k = 0; k < i; ++k)
            if (fs::path(batch.jobs[k].config.output.dir).lexically_normal() ==
                fs::path(job.config.output.dir).lexically_normal())
                throw ConfigError(path + ": jobs \"" + batch.jobs[k].name + "\" and \"" + job.name +
                                  "\" both write to " + job.config.output.dir + "; give each [[job]] its own [output] dir");
    }
    return batch;
}

Batch load_jobs(const std::string& path) { return parse_jobs(read_config_text(path), path); }

}  // namespace stackalign
