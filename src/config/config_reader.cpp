// One TOML table to a Config, checked against the schema: unknown keys, keys
// of the other mode, wrong types and out-of-range values are errors naming
// the file, line and key; then the rules that tie keys together.
#include <algorithm>
#include <filesystem>
#include <sstream>

#include "../core/error.hpp"
#include "config.hpp"
#include "config_reader.hpp"
#include "schema.hpp"

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

// "file:line: " where the key came from a file, "" where it did not (the
// Python module's keywords, which have no file and no lines).
static std::string source_prefix(const std::string& path, int line) {
    if (path.empty()) return "";
    return path + (line > 0 ? ":" + std::to_string(line) : "") + ": ";
}

std::string Config::where(const std::string& key) const {
    auto it = lines.find(key);
    const auto dot = key.find('.');
    const std::string pretty = dot == std::string::npos ? key : "[" + key.substr(0, dot) + "] " + key.substr(dot + 1);
    return source_prefix(path, it == lines.end() ? 0 : it->second) + pretty;
}

std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates);

namespace {

const std::vector<std::string> top_level_keys = {"mode", "job"};

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
    return nearest_word(word, candidates);
}

}  // namespace

std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    int best_d = 1 << 30;
    for (const auto& c : candidates) {
        const int d = edit_distance(word, c);
        if (d < best_d) best_d = d, best = c;
    }
    // Only suggest when the typo is plausibly a typo.
    return best_d <= std::max<int>(2, int(word.size()) / 3) ? best : "";
}

namespace {

std::string type_name(const toml::node& n) {
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

std::string range_text(double v, double lo, double hi) {
    std::ostringstream m;
    m << "value " << v << " is out of range; expected " << lo << " to " << hi;
    return m.str();
}

class Reader {
public:
    Reader(const toml::table& root, Config& cfg) : root_(root), cfg_(cfg) {}

    [[noreturn]] void fail(const toml::node* n, const std::string& key, const std::string& what) const {
        throw ConfigError(source_prefix(cfg_.path, n ? int(n->source().begin.line) : 0) + key + ": " + what);
    }

    void check_unknown_keys() const {
        const std::vector<std::string> sections = schema_sections();
        std::string listed;
        for (const std::string& s : sections) listed += (listed.empty() ? "[" : " [") + s + "]";
        for (const auto& [k, node] : root_) {
            const std::string key(k.str());
            if (std::find(top_level_keys.begin(), top_level_keys.end(), key) != top_level_keys.end()) continue;
            if (std::find(sections.begin(), sections.end(), key) == sections.end()) {
                std::string hint = nearest(key, sections);
                // A section key written at top level ("bins = 64" above any [section]).
                for (const KeySpec& spec : config_schema())
                    if (!spec.section.empty() && spec.name == key) hint = spec.label();
                fail(&node, key, "unknown section or key" + (hint.empty() ? "" : "; did you mean " + hint + "?") +
                                    " (sections: " + listed + ")");
            }
            if (!node.is_table()) fail(&node, key, "expected a [" + key + "] table");
            const std::vector<std::string> valid = section_keys(key);
            for (const auto& [k2, n2] : *node.as_table()) {
                const std::string key2(k2.str());
                if (find_key(key, key2)) continue;
                std::string hint = nearest(key2, valid);
                for (const KeySpec& spec : config_schema())
                    if (spec.section != key && spec.name == key2 && !spec.section.empty()) hint = spec.label();
                std::string list;
                for (const std::string& v : valid) list += (list.empty() ? "" : ", ") + v;
                fail(&n2, "[" + key + "] " + key2,
                     "unknown key" + (hint.empty() ? "" : "; did you mean " + hint + "?") + " (valid: " + list + ")");
            }
        }
    }

    const toml::node* get(const KeySpec& k) {
        const toml::node* n = k.section.empty() ? root_.get(k.name) : root_.at_path(k.key()).node();
        if (n) cfg_.lines[k.key()] = int(n->source().begin.line);
        return n;
    }

    // Keys the other mode reads are mistakes here, not silently ignored.
    void refuse(const KeySpec& k, const std::string& why) {
        if (const toml::node* n = get(k)) fail(n, k.label(), why);
    }

    // The key's value, checked against its row; null when the key is absent.
    Value read(const KeySpec& k) {
        const toml::node* n = get(k);
        if (!n) return nullptr;
        const std::string label = k.label();
        switch (k.type) {
            case KeyType::string: case KeyType::path: case KeyType::choice: {
                if (!n->is_string()) fail(n, label, "expected a string, got " + type_name(*n));
                const std::string v = n->as_string()->get();
                if (k.type == KeyType::choice) check_choice(k, n, v);
                return v;
            }
            case KeyType::boolean:
                if (!n->is_boolean()) fail(n, label, "expected true or false, got " + type_name(*n));
                return n->as_boolean()->get();
            case KeyType::integer: return integer(*n, label, k.lo, k.hi);
            case KeyType::number: return number(*n, label, k.lo, k.hi);
            case KeyType::int_pair: case KeyType::int_triple: case KeyType::number_triple: {
                const std::size_t size = k.type == KeyType::int_pair ? 2 : 3;
                const bool ints = k.type != KeyType::number_triple;
                const toml::array* a = n->as_array();
                if (!a || a->size() != size)
                    fail(n, label, std::string("expected an array of ") + (size == 2 ? "two " : "three ") +
                                       (ints ? "integers " : "numbers ") + k.parts);
                Value out = Value::array();
                for (std::size_t i = 0; i < size; ++i) {
                    const std::string what = label + "[" + std::to_string(i) + "]";
                    out.push_back(ints ? integer(*a->get(i), what, k.lo, k.hi) : number(*a->get(i), what, k.lo, k.hi));
                }
                return out;
            }
            case KeyType::int_list: {
                const toml::array* a = n->as_array();
                if (!a) fail(n, label, "expected an array of " + k.parts + ", got " + type_name(*n));
                Value out = Value::array();
                for (std::size_t i = 0; i < a->size(); ++i)
                    out.push_back(integer(*a->get(i), label + "[" + std::to_string(i) + "]", k.lo, k.hi));
                return out;
            }
            case KeyType::angles: return angles(*n, label);
            case KeyType::reference:
                if (n->is_string()) {
                    if (n->as_string()->get() != "middle")
                        fail(n, label, "expected \"middle\" or a 0-based frame index, got \"" + n->as_string()->get() + "\"");
                    return "middle";
                }
                return integer(*n, label, 0, 1 << 30);
            case KeyType::number_or_auto:
            case KeyType::integer_or_auto: {
                const bool whole = k.type == KeyType::integer_or_auto;
                if (n->is_string()) {
                    if (n->as_string()->get() != "auto")
                        fail(n, label, std::string("expected \"auto\" or ") + (whole ? "an integer" : "a number") +
                                           ", got \"" + n->as_string()->get() + "\"");
                    return "auto";
                }
                return whole ? integer(*n, label, k.lo, k.hi) : number(*n, label, k.lo, k.hi);
            }
            case KeyType::bool_or_choice:
                if (n->is_boolean()) return n->as_boolean()->get() ? k.if_true : k.if_false;
                if (!n->is_string()) fail(n, label, "expected true, false or a string, got " + type_name(*n));
                check_choice(k, n, n->as_string()->get());
                return n->as_string()->get();
            case KeyType::gpus: {
                if (n->is_string() && n->as_string()->get() == "all") return "all";
                const toml::array* a = n->as_array();
                if (!a || a->empty()) fail(n, label, "expected \"all\" or a list of GPU indices such as [0, 1]");
                Value out = Value::array();
                for (std::size_t i = 0; i < a->size(); ++i)
                    out.push_back(integer(*a->get(i), label + "[" + std::to_string(i) + "]", k.lo, k.hi));
                return out;
            }
        }
        return nullptr;
    }

private:
    long long integer(const toml::node& n, const std::string& what, double lo, double hi) const {
        if (!n.is_integer()) fail(&n, what, "expected an integer, got " + type_name(n));
        const long long v = n.as_integer()->get();
        if (v < lo || v > hi)
            fail(&n, what, "value " + std::to_string(v) + " is out of range; expected " + std::to_string((long long)(lo)) +
                               " to " + std::to_string((long long)(hi)));
        return v;
    }
    double number(const toml::node& n, const std::string& what, double lo, double hi) const {
        if (!n.is_number()) fail(&n, what, "expected a number, got " + type_name(n));
        const double v = n.is_integer() ? double(n.as_integer()->get()) : n.as_floating_point()->get();
        if (!(v >= lo && v <= hi)) fail(&n, what, range_text(v, lo, hi));
        return v;
    }
    void check_choice(const KeySpec& k, const toml::node* n, const std::string& v) const {
        if (std::find(k.choices.begin(), k.choices.end(), v) != k.choices.end()) return;
        std::string list;
        for (const auto& o : k.choices) list += (list.empty() ? "\"" : ", \"") + o + "\"";
        const auto m = k.meant.find(v);
        const std::string hint = m != k.meant.end() ? m->second : nearest(v, k.choices);
        fail(n, k.label(), "\"" + v + "\" is not valid; expected one of " + list +
                               (hint.empty() ? "" : " (did you mean \"" + hint + "\"?)"));
    }
    Value angles(const toml::node& n, const std::string& label) const {
        if (n.is_string()) {
            if (n.as_string()->get().empty()) fail(&n, label, "must not be empty");
            return n.as_string()->get();
        }
        const toml::table* t = n.as_table();
        if (!t) fail(&n, label, "expected a tilt-angle file (\"x.tlt\") or {start = -60, step = 2}, got " + type_name(n));
        for (const auto& [k, v] : *t)
            if (k.str() != "start" && k.str() != "step")
                fail(&v, label + "." + std::string(k.str()), "unknown key (valid: start, step)");
        Value out;
        for (const char* part : {"start", "step"}) {
            const toml::node* e = t->get(part);
            if (!e || !e->is_number())
                fail(&n, label, std::string("expected {start = <degrees>, step = <degrees>}; ") + part + " is " +
                                    (e ? "not a number" : "missing"));
            out[part] = e->is_integer() ? double(e->as_integer()->get()) : e->as_floating_point()->get();
        }
        return out;
    }

    const toml::table& root_;
    Config& cfg_;
};

std::string resolve(const std::string& base_dir, const std::string& p) {
    if (p.empty() || fs::path(p).is_absolute()) return p;
    return (fs::path(base_dir) / p).lexically_normal().string();
}

// The rules that tie keys together, after each key was read on its own.
void check_rules(Reader& r, Config& cfg) {
    const std::string& path = cfg.path;
    if (cfg.mode == Mode::landmarks) {
        for (auto [key, value] : {std::pair<const char*, std::string*>{"source", &cfg.landmarks.source},
                                  {"target", &cfg.landmarks.target}, {"points", &cfg.landmarks.points}})
            if (value->empty())
                throw ConfigError(source_prefix(path, 0) + "[landmarks] " + key + ": required with mode = \"landmarks\" (" +
                                  (std::string(key) == "points" ? "a CSV, .landmarkAscii or BigWarp CSV file of source points"
                                                                : "a multi-page TIFF volume, pages = z") + ")");
    } else if (!cfg.input.stack.empty() + !cfg.input.files.empty() + !cfg.input.glob.empty() != 1) {
        throw ConfigError(source_prefix(path, 0) + "[input]: give exactly one of stack = \"file.tif\" (multi-page TIFF or MRC "
                          "stack), files = \"folder/*.tif\" (one TIFF per frame) or glob = \"data/*/*.tif\" "
                          "(one job per stack)");
    }
    if (cfg.search.origin_x && cfg.search.window_width == 0)
        throw ConfigError(cfg.where("search.window_origin") + ": needs [search] window = [width, height] as well");
    if (cfg.search.method == SearchMethod::mtb_projection) {
        if (cfg.mode == Mode::landmarks)
            throw ConfigError(cfg.where("search.method") + ": \"mtb-projection\" aligns 2D frames; landmark "
                              "matching in volumes needs method = \"window\"");
        const std::string why = "not used with method = \"mtb-projection\" (it thresholds the raw frames at their "
                                "median and compares row/column projections; no histogram, no metric)";
        for (const KeySpec& k : config_schema())
            if (k.section == "preprocess" || k.key() == "search.histogram" || k.key() == "search.metric" ||
                k.key() == "search.refine_metric" || k.key() == "search.refine_sigma")
                r.refuse(k, why);
    } else {
        r.refuse(*find_key("search", "mtb_band"), "only used with method = \"mtb-projection\"");
    }
    if (computes_cr_only(cfg.search.histogram) && cfg.search.metric != Metric::cr)
        throw ConfigError(cfg.where("search.histogram") + ": \"" + name_of(cfg.search.histogram) +
                          "\" computes the correlation ratio only; set [search] metric = \"cr\" (it is \"" +
                          name_of(cfg.search.metric) + "\")");
    if ((cfg.mode == Mode::landmarks ? cfg.landmarks.subpixel : cfg.search.subpixel) != Subpixel::continuous)
        r.refuse(*find_key("search", "refine_metric"), "only used with subpixel = true (\"continuous\")");
    if (cfg.search.subpixel != Subpixel::continuous) {
        r.refuse(*find_key("search", "refine_sigma"), "only used with subpixel = true (\"continuous\")");
        r.refuse(*find_key("search", "refine_side"), "only used with subpixel = true (\"continuous\")");
    }
    if (cfg.search.refine_metric == RefineMetric::automatic && cfg.mode != Mode::landmarks &&
        cfg.search.motion.translation_only())
        throw ConfigError(cfg.where("search.refine_metric") +
                          ": \"auto\" chooses per pair for transform = \"rigid\" or \"similarity\" and per point "
                          "for landmarks; for shifts choose \"mi\" (any one-to-one change of contrast) or \"ncc\" "
                          "(frames of one contrast)");
    // A list of one GPU is the job's GPU, for every stage and plan that
    // reads `gpu`; another given as gpu is a contradiction, not a choice to guess.
    if (cfg.device.gpus.size() == 1 && cfg.device.gpus[0] >= 0) {
        if (cfg.lines.count("device.gpu") && cfg.device.gpus[0] != cfg.device.gpu)
            throw ConfigError(cfg.where("device.gpus") + ": names GPU " + std::to_string(cfg.device.gpus[0]) +
                              " but [device] gpu = " + std::to_string(cfg.device.gpu) + "; give one of them");
        cfg.device.gpu = cfg.device.gpus[0];
    }
    if (cfg.output.dir.empty()) throw ConfigError(cfg.where("output.dir") + ": must not be empty");
}

}  // namespace

Config config_from_table(const toml::table& root, const std::string& path) {
    return config_from_table(root, path, fs::path(path).parent_path().string());
}

Config config_from_table(const toml::table& root, const std::string& path, const std::string& base) {
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

    const KeySpec& mode = *find_key("", "mode");
    if (Value v = r.read(mode); !v.is_null()) mode.set(cfg, v);
    const bool landmarks = cfg.mode == Mode::landmarks;
    for (const KeySpec& k : config_schema()) {
        if (k.used_by == (landmarks ? UsedBy::stack : UsedBy::landmarks)) {
            r.refuse(k, landmarks ? k.section == "output"
                                        ? "not used with mode = \"landmarks\" (no aligned stack is written)"
                                        : "not used with mode = \"landmarks\"; landmark runs are set up in [landmarks]"
                                  : "only used with mode = \"landmarks\" (this config has mode = \"stack\")");
            continue;
        }
        if (&k == &mode) continue;
        if (Value v = r.read(k); !v.is_null()) k.set(cfg, v);
    }
    check_rules(r, cfg);

    for (const KeySpec& k : config_schema())
        if (k.type == KeyType::path) k.set(cfg, resolve(base, k.get(cfg).get<std::string>()));
    cfg.input.angles_file = resolve(base, cfg.input.angles_file);
    return cfg;
}

Config parse_config(const std::string& text, const std::string& path) {
    return config_from_table(parse_toml(text, path), path);
}

Config load_config(const std::string& path) { return parse_config(read_config_text(path), path); }

}  // namespace stackalign
