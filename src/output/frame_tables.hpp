// The per-frame results as tables: shifts.csv and IMOD's .xf / .prexf / .prexg.
#pragma once
#include <string>
#include <vector>

#include "../alignment/transform.hpp"

namespace stackalign {

struct FrameResult {
    Transform offset;          // the frame relative to the reference
    Transform neighbour;       // relative to the previous searched view (identity for the first; NaN if excluded)
    double mi = 0;             // MI of the pair (previous, this); NaN where no pair ends here
    double sharpness = 0;      // that pair's MI peak sharpness; NaN where none
    double confidence = 0;     // that pair's peak against chance (pair_confidence.hpp); NaN where none
    double tilt = 0;           // degrees; NaN when the series has no angles
    Transform coarse;          // projection matching: the offset the pairs gave, before it
    double projection_residual = 0;  // projection matching: how far the last round moved the view (pixels; NaN if not matched)
    std::string status;        // reference | ok | excluded | weak peak | outlier ..., "(interpolated)" when replaced
};

// shifts.csv: frame,dx,dy,neighbour_dx,neighbour_dy,mi,sharpness,confidence,tilt,status;
// with `rotation` (rigid, similarity) also angle,scale after dy and
// neighbour_angle after neighbour_dy (degrees, IMOD's sense). dx,dy: where
// the reference's centre lies in the frame, less the centre.
// With `projection` (projection matching) also coarse_dx,coarse_dy (the
// pairs' offset) and projection_residual after tilt.
std::string shifts_csv(const std::vector<FrameResult>& frames, bool rotation = false, bool projection = false);
// IMOD .xf / .prexg: one "A11 A12 A21 A22 DX DY" line per frame (Fortran
// 4f12.7,2f12.3), DX,DY = the shift to apply = minus the content offset, so
// the reference view is the identity (as `xftoxg -nfit 0 -ref`) unless a
// tilt series' later stages moved it (the centres of mass move every view
// to put the tilt axis at the centre).
std::string imod_xf(const std::vector<FrameResult>& frames);
// IMOD .prexf: each view's transform onto the previous view (the first view
// unit), the differences of the .prexg lines, so xftoxg -nfit 0 on it
// gives back the .prexg.
std::string imod_prexf(const std::vector<FrameResult>& frames);
// IMOD's .tlt: each frame's tilt angle in degrees, a line each.
std::string imod_tlt(const std::vector<FrameResult>& frames);
std::string xf_line(double a11, double a12, double a21, double a22, double dx, double dy);
std::string xf_line(const Transform& t);

}  // namespace stackalign
