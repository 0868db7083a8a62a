// Writing a file so that a crash never leaves one that looks finished: it
// goes to a temporary name in the same folder and is renamed into place once
// complete. Every writer of results uses this (src/output/atomic_write adds
// text files and output folders on top).
#pragma once
#include <functional>
#include <string>

namespace stackalign {

// Calls write(tmp_path), then renames tmp_path to path (a file already there
// is moved aside first and removed after). On any exception the
// temporary file is removed and the exception propagates. The temporary is
// ".<stem>.partial-<pid><suffixes>" beside `path`: it keeps the name's
// suffixes because libraries choose a format or an encoding by them (NIfTI
// .nii or .nii.gz), and a run that finds one whose process is gone removes it.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

}  // namespace stackalign
