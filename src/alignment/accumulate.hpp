// From neighbour shifts to one offset per frame relative to the reference.
#pragma once
#include <vector>

namespace stackalign {

struct Shift {
    double dx = 0, dy = 0;
};

// neighbour[i] is the content offset of frame i+1 relative to frame i.
// Returns, per frame, its offset relative to `reference` (which gets 0),
// summed outward from the reference in both directions.
std::vector<Shift> accumulate_shifts(const std::vector<Shift>& neighbour, int reference);

// Offsets of all `views` when only `kept` (ascending view indices, including
// `reference`) were chained: pair_shift[i] is the offset of kept[i+1]
// relative to kept[i]. Views not kept get offsets interpolated linearly by
// view index between the kept views around them, or the nearest kept view's
// beyond either end.
std::vector<Shift> chain_offsets(int views, const std::vector<int>& kept, const std::vector<Shift>& pair_shift,
                                 int reference);

// Parabola through three equally spaced samples: the peak's offset from the
// middle one, in [-0.5, 0.5]; 0 when the samples do not form a maximum.
double parabolic_offset(double left, double centre, double right);

}  // namespace stackalign
