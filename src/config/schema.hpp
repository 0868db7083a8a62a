// Every config key once: section, name, type, range or valid values,
// default, one line of documentation, which mode uses it, and how its value
// reaches the typed Config. The TOML reader checks and reads through this
// table, `stackalign keys` and docs/config.md's table print it, run.json
// echoes the resolved config through it. A key that is not here does not
// exist.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.hpp"

namespace stackalign {

enum class KeyType {
    string,        // free text
    path,          // a file or folder, resolved against the config's folder
    boolean,
    integer,       // in [lo, hi]
    number,        // in [lo, hi]
    choice,        // one of `choices`
    int_pair,      // [a, b], each in [lo, hi]; `parts` names them
    int_triple,    // [x, y, z], each in [lo, hi]
    number_triple, // [x, y, z], each in [lo, hi]
    int_list,      // [a, b, ...], each in [lo, hi]
    angles,        // a tilt-angle file, or {start = <deg>, step = <deg>}
    reference,     // "middle" or a 0-based frame index
    number_or_auto, // "auto" or a number in [lo, hi]
    integer_or_auto, // "auto" or an integer in [lo, hi]
    gpus,          // "all" or a list of GPU indices
    bool_or_choice,  // true (= `if_true`), false (= `if_false`) or one of `choices`
};

// Which mode's jobs read a key; the other mode refuses it.
enum class UsedBy { both, stack, landmarks };

using Value = nlohmann::json;

struct KeySpec {
    std::string section;           // "" for top-level keys
    std::string name;
    KeyType type;
    double lo = 0, hi = 0;         // numeric range (of each element for arrays)
    std::vector<std::string> choices;
    std::map<std::string, std::string> meant;  // choice: words users write for a valid value ("gpu" -> "cuda")
    std::string parts;             // arrays: what the elements are, e.g. "[width, height]"
    std::string if_true, if_false; // bool_or_choice: the choices true and false stand for
    UsedBy used_by = UsedBy::both;
    std::string default_text;      // as docs/config.md shows it
    std::string doc;
    std::function<void(Config&, const Value&)> set;
    std::function<Value(const Config&)> get;

    std::string label() const { return section.empty() ? name : "[" + section + "] " + name; }
    std::string key() const { return section.empty() ? name : section + "." + name; }
};

const std::vector<KeySpec>& config_schema();
// The row of section.name, or nullptr.
const KeySpec* find_key(const std::string& section, const std::string& name);
// Section names in the order the schema lists them.
std::vector<std::string> schema_sections();
// Names of the keys of one section, sorted.
std::vector<std::string> section_keys(const std::string& section);

// The candidate closest to `word` by edit distance, when close enough to be
// a typo of it; "" otherwise. (The reader's "did you mean ...?".)
std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates);

// docs/config.md's table (markdown), one row per key; its links are
// relative to docs/.
std::string schema_markdown();
// The resolved config as JSON, keys of the job's mode only: run.json's "config".
nlohmann::ordered_json config_values(const Config& cfg);
// The same as "[section] key = value" lines, for `stackalign check`.
std::string describe_config(const Config& cfg);

}  // namespace stackalign
