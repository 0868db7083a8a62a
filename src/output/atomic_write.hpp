// Writing results so that a crash never leaves a file that looks finished:
// everything goes to a temporary name in the same folder and is renamed into
// place once complete.
#pragma once
#include <functional>
#include <string>

namespace stackalign {

// Creates the folder (and parents); OutputError if it cannot be written.
void prepare_output_dir(const std::string& dir);

// Calls write(tmp_path), then renames tmp_path to path. On any exception the
// temporary file is removed and the exception propagates.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace stackalign
