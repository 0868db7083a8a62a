// The specimen's plane in its reconstruction: the tilt-angle offset that
// lays its content level, as IMOD's findsection and tomopitch look for it.
//
// A constant added to every tilt angle only turns the reconstruction about
// the tilt axis, so a slab reconstructed at the angles read shows its
// layers turned by the stage's offset. Two measures of that turn are made
// on the content's detail (each slice less a Gaussian of 2 px, squared, a
// 4 x 4 box mean, summed over the slices into one map over depth and place
// across the axis):
// - the orientation of the map's gradients (its structure tensor), and
// - the turn under which the map gives the most concentrated depth profile.
// Flat layers satisfy both at one turn. Content that fills a slab's depth
// has no plane, and the two answer by different features of it: on the
// bench's zebrafish slab 3.2-3.9 degrees apart, on the wide slab 6 or
// more, on five layers 9, on the 8-px slab 1.6-1.8; on one, two and three
// flat layers within 0.24 (`python3 bench/slab_plane.py --reconstruct`,
// 256 px, 1000 and 100 photons). So the offset is used only where they
// agree (docs/tomography.md#tilt-offset).
#pragma once
#include <string>
#include <vector>

namespace stackalign {

struct SpecimenPlane {
    bool found = false;         // both measures made and within kPlaneAgreeDeg of each other
    double offset_deg = 0;      // add to the angles the volume was reconstructed at (the profile's)
    double tensor_deg = 0;      // the structure tensor's
    double profile_deg = 0;     // the sharpest depth profile's
    double standard_error = 0;  // a jackknife over groups of slices, half the measures' gap and the map's resolution, in quadrature
    std::string why_not;        // where not found
};

// The measures' largest gap for the offset to be used, degrees. Content
// that fills a slab's depth has no plane, and the two answer by different
// features of it (blobs filling a slab: 5.1, tests/test_specimen_plane.cpp;
// the bench's thick slabs, zebrafish, wide and five layers, 1.4-8.8, which
// the slab fit's knee stops first). Flat layers' gaps reach 0.56-0.63
// (three layers at +2 degrees once the axis's place is set, none / 1000 /
// 100 photons), where the profile lies within 0.07 degrees of the stage's
// plane (`python3 bench/tilt_accuracy.py --cases slab-layers3-offset
// --no-reference --variants defaults`), and 0.6 on layers whose detail
// leans within them (the test of that band).
constexpr double kPlaneAgreeDeg = 1.0;

// `volume`: `rows` slices of `width` x `thickness` floats (x fastest, then
// depth), a tilt series' reconstruction (kernels/tomo). Turns within
// +-10 degrees; a profile's best at that end is not found.
SpecimenPlane specimen_plane(const std::vector<float>& volume, int width, int thickness, int rows);

}  // namespace stackalign
