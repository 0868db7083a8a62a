// Tilt angles of a tilt series as users give them: an IMOD .tlt/.rawtlt
// file, or a start and a step.
#pragma once
#include <string>
#include <vector>

namespace stackalign {

// IMOD .tlt / .rawtlt: one angle (degrees) per line; blank lines and `#`
// comments are skipped. InputError naming the line for anything else.
std::vector<double> read_tilt_angles(const std::string& path);
std::vector<double> parse_tilt_angles(const std::string& text, const std::string& path);

// start, start + step, ... (count angles).
std::vector<double> tilt_range(double start, double step, int count);

}  // namespace stackalign
