// Between the config layer's own files: one parsed TOML table to a Config
// (config_reader.cpp), for the job expansion in jobs.cpp.
#pragma once
#include <string>

#include "config.hpp"
#include "toml_document.hpp"

namespace stackalign {

Config config_from_table(const toml::table& root, const std::string& path);

}  // namespace stackalign
