// Writing results so that a crash never leaves a file that looks finished:
// everything goes to a temporary name in the same folder and is renamed into
// place once complete.
#pragma once
#include <string>

#include "../core/atomic_file.hpp"

namespace stackalign {

// Creates the folder (and parents); OutputError if it cannot be written.
void prepare_output_dir(const std::string& dir);

// A text file, through write_atomically (core/atomic_file.hpp).
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace stackalign
