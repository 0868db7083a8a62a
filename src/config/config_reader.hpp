// One TOML table to a Config (config_reader.cpp): for the job expansion in
// jobs.cpp, and for the Python module, whose keywords become a table of typed
// values (no text) checked by the same schema.
#pragma once
#include <string>

#include "config.hpp"
#include "toml_document.hpp"

namespace stackalign {

// Relative paths resolve against the config file's folder.
Config config_from_table(const toml::table& root, const std::string& path);
// `path` empty: the table came from no file (messages name the key alone);
// relative paths resolve against `base_dir`.
Config config_from_table(const toml::table& root, const std::string& path, const std::string& base_dir);

}  // namespace stackalign
