// Writing results so that a crash never leaves a file that looks finished:
// everything goes to a temporary name in the same folder and is renamed into
// place once complete.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "image.hpp"
#include "shift_chain.hpp"

namespace stackalign {

// Creates the folder (and parents); OutputError if it cannot be written.
void prepare_output_dir(const std::string& dir);

// Calls write(tmp_path), then renames tmp_path to path. On any exception the
// temporary file is removed and the exception propagates.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);
void write_text_atomically(const std::string& path, const std::string& text);

struct FrameResult {
    Shift offset;              // content offset relative to the reference
    Shift neighbour;           // relative to the previous frame (0 for frame 0)
    double mi = 0;             // MI of the pair (previous, this); NaN for frame 0
};

// shifts.csv: frame,dx,dy,neighbour_dx,neighbour_dy,mi
std::string shifts_csv(const std::vector<FrameResult>& frames);
// IMOD .xf: one "A11 A12 A21 A22 DX DY" line per frame (Fortran 4f12.7,2f12.3),
// DX,DY = the shift to apply = minus the content offset.
std::string imod_xf(const std::vector<FrameResult>& frames);
std::string xf_line(double a11, double a12, double a21, double a22, double dx, double dy);

}  // namespace stackalign
