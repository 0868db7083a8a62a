// The tilt axis's place across the views of a slab: the constant shift of
// every view that leaves its reconstruction sharpest.
//
// Why a reconstruction's sharpness: every view moved alike is the tilt axis
// off the views' centre, which no object's translation gives (that moves
// view t by x cos t + z sin t), so a reconstruction about the centre sees
// it. A slab's views over a limited range barely say so by how well they
// agree: a support a few pixels deep can hold content bent in depth that
// reprojects nearly as the views show, and the slab fit's residual hardly
// changes with the axis's place ([Tilt series](docs/tomography.md#axis-place)).
// But that content is smeared in depth: the reconstruction about the right
// place is the sharpest, measured as the ratio of its fourth-power mean to
// its square mean (large where the contrast sits in few voxels).
#pragma once
#include <vector>

namespace stackalign {

// `fine` x `fine` held pixels averaged into one, the held views (views x
// held_rows x held_width, NaN outside the frame) read `shift` held pixels
// further across the axis: out (views x rows x width), pixel (i, j) of
// view v the mean of held columns first + shift + i fine .. + fine - 1 and
// rows row0 + j fine .. + fine - 1 (NaN where any of them is NaN).
struct HeldGrid {
    int width = 0, rows = 0, views = 0, fine = 1;
};
void binned_across_shift(const std::vector<float>& held, const HeldGrid& h, int first, int row0, int shift, int width,
                         int rows, std::vector<float>& out);

// The fourth-power mean's fourth root over the square mean's square root,
// over a volume's (rows x thickness x width, x fastest) middle half across.
double sharpness(const std::vector<float>& volume, int width, int thickness, int rows);

// The place of the largest of `values` at the equally spaced `shifts`,
// refined by a parabola through it and its neighbours; `found` false where
// the largest is an end of the scan.
struct SharpestShift {
    bool found = false;
    double shift = 0;
};
SharpestShift sharpest_shift(const std::vector<double>& shifts, const std::vector<double>& values);

}  // namespace stackalign
