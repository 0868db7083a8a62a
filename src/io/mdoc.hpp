// SerialEM's .mdoc, the metadata written beside a tilt series: a header of
// `Key = value` lines and `[T = ...]` titles (one names the tilt axis:
// "Tilt axis angle = 85.3"), then one `[ZValue = N]` section per view in
// the stack's order, each with its `TiltAngle` and, where the views were
// saved as files of their own, its `SubFramePath`. CRLF or LF, keys in any
// order, sections in any order.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace stackalign {

struct MdocView {
    int z = 0;                  // the section's ZValue: the view's place in the stack
    double tilt = 0;            // TiltAngle, degrees
    std::string subframe_path;  // SubFramePath, as written (may be a Windows path); "" where none
    int line = 0;               // the [ZValue] line, for messages
};

struct Mdoc {
    std::string path;
    std::vector<MdocView> views;          // by ZValue: views[k].z == k
    std::optional<double> tilt_axis;      // the header's "Tilt axis angle", degrees
    std::optional<double> pixel_spacing;  // the header's PixelSpacing (Angstrom)
    std::vector<double> tilts() const;    // in ZValue order
};

// InputError naming the file and line for: a section without TiltAngle, a
// value that is not a number, a ZValue given twice, a ZValue missing from
// 0 .. n-1, no section at all.
Mdoc parse_mdoc(const std::string& text, const std::string& path);
Mdoc read_mdoc(const std::string& path);

// The files of a series saved one view per file, in ZValue order: each
// view's SubFramePath, found beside the .mdoc by its file name alone (the
// path written is the acquisition PC's, often a Windows one). InputError
// naming the .mdoc's line for a view without SubFramePath, or whose file is
// not beside the .mdoc.
std::vector<std::string> mdoc_view_files(const Mdoc& mdoc);

// The .mdoc SerialEM writes beside `stack` (NAME.mdoc, NAME.EXT.mdoc, e.g.
// TS_01.mrc.mdoc or TS_01.st.mdoc), or "" where there is none.
std::string mdoc_beside(const std::string& stack);

// Whether `path` names an .mdoc (by its suffix).
bool is_mdoc(const std::string& path);

}  // namespace stackalign
