// The decisions a tilt series' plan makes from its angles and the config:
// whether pairs are cosine-stretched, whether a whole object's views are
// placed by their centres of mass, and whether (and which way) projection
// matching moves the views. A series reaching beyond kSlabTiltLimit is a
// whole object; within it, a slab.
#pragma once
#include "../../src/config/config.hpp"
#include "stack_plan.hpp"

namespace stackalign {

// The largest |angle - offset| of the series, degrees.
double widest_tilt(const std::vector<double>& angles, double offset = 0);

// plan.stretch, stretch_auto, stretch_ruled_out, stretch_why.
void decide_stretch(StackPlan& plan, StretchMode mode);
// plan.centre_of_mass, centre_of_mass_forced, centre_of_mass_why.
void decide_centre_of_mass(StackPlan& plan, CentreOfMassMode mode);
// plan.slab_fit, slab_fit_auto, slab_fit_why.
void decide_slab_fit(StackPlan& plan, SlabFitMode mode);
// plan.projection (and projection_why). ConfigError where it is asked for
// and cannot run (no angles, not the window search, views too small).
void decide_projection_matching(StackPlan& plan, const Config& cfg);

}  // namespace stackalign
