// The names of the files a job writes, spelled once: the write stages use
// them, and the output guard checks exactly these against the inputs.
#pragma once
#include <filesystem>
#include <string>

namespace stackalign::output_names {

inline const char* const run_json = "run.json";
// stacks
inline const char* const aligned_tiff = "aligned.tif";
inline const char* const aligned_mrc = "aligned.mrc";
inline const char* const shifts = "shifts.csv";
inline const char* const transforms = "transforms.xf";
inline const char* const report = "report.html";
// The stem of the IMOD files (<stem>.prexf, <stem>.prexg): the stack's
// name, or "series" for one TIFF per frame.
inline std::string imod_stem(const std::string& stack_path) {
    return stack_path.empty() ? "series" : std::filesystem::path(stack_path).stem().string();
}
inline std::string prexf(const std::string& stem) { return stem + ".prexf"; }
inline std::string prexg(const std::string& stem) { return stem + ".prexg"; }
// a tilt series' angles as the stages used them (tilt_offset added; where
// the slab fit ran or the centres of mass placed a whole object, the
// angles read: take_angles_as_read)
inline std::string tlt(const std::string& stem) { return stem + ".tlt"; }
// landmarks
inline const char* const matches = "matches.csv";
inline const char* const matches_amira = "matches.landmarkAscii";
inline const char* const matches_bigwarp = "matches_bigwarp.csv";
inline const char* const fit = "fit.txt";
inline const char* const fit_itk = "fit.tfm";
inline const char* const fit_elastix = "fit_elastix.txt";

}  // namespace stackalign::output_names
