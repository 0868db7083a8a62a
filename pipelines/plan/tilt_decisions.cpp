#include "tilt_decisions.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "../../src/core/error.hpp"

namespace stackalign {

double widest_tilt(const std::vector<double>& angles, double offset) {
    double widest = 0;
    for (double a : angles) widest = std::max(widest, std::fabs(a - offset));
    return widest;
}

// No slab is imaged beyond about 80 degrees: the beam's path through it
// would be 5.8 times its thickness and more. A series that reaches further
// is of a needle, a pillar or a whole object (X-ray projections), whose
// views do not foreshorten as the slab model says. There "auto" does not
// stretch at all rather than let each pair's two peaks decide: on the
// sample needle (-90..90) that choice stretched 14 of 88 pairs, and the
// compare's jittered series came out 0.049 px RMS against 0.042 unstretched
// (ten seeds); it also searches every pair twice.
void decide_stretch(StackPlan& plan, StretchMode mode) {
    plan.stretch = plan.stretch_auto = plan.stretch_ruled_out = false;
    if (plan.angles.empty()) {
        plan.stretch_why = "no tilt angles";
        return;
    }
    if (mode != StretchMode::automatic) {
        plan.stretch = mode == StretchMode::on;
        plan.stretch_why = "config";
        return;
    }
    const double widest = widest_tilt(plan.angles);
    if (widest > kSlabTiltLimit) {
        std::ostringstream why;
        why << "auto: off, the series reaches " << widest << " degrees, beyond a slab's " << kSlabTiltLimit
            << " (a needle, pillar or whole object does not foreshorten; cosine_stretch = true stretches it)";
        plan.stretch_why = why.str();
        plan.stretch_ruled_out = true;
        return;
    }
    plan.stretch = plan.stretch_auto = true;
    plan.stretch_why = "auto: the pairs aligned stretched and as read, the smaller least-squares residual kept";
}

// [alignment] center_of_mass: a whole object's views are placed by their
// moments where they pass the stage's checks, whatever the range.
void decide_centre_of_mass(StackPlan& plan, CentreOfMassMode mode) {
    plan.centre_of_mass = plan.centre_of_mass_forced = false;
    if (plan.angles.empty()) {
        plan.centre_of_mass_why = "no tilt angles";
        return;
    }
    if (!plan.motion.translation_only()) {
        plan.centre_of_mass_why = "off: moments place translations, and transform is \"" +
                                  name_of(plan.motion.model) + "\"";
        return;
    }
    if (mode != CentreOfMassMode::automatic) {
        plan.centre_of_mass = plan.centre_of_mass_forced = mode == CentreOfMassMode::on;
        plan.centre_of_mass_why = "config";
        return;
    }
    // Every tilt series is offered to the checks, not only those beyond a
    // slab's range: a whole object seen over +-60 degrees passes them (the
    // bench's whole object over 61 views: 0.748 px gauge-free left to the
    // pairs, 0.018 by its moments), and a slab's material, entering and
    // leaving the views at their sides, fails them.
    plan.centre_of_mass = true;
    plan.centre_of_mass_why = "auto: placed by its moments where the views pass the checks (a whole object inside "
                              "them; a slab's material leaves them)";
}

// [alignment] slab_fit: a slab's views only (a whole object's centres of
// mass place it), translations only; "auto" leaves the last word to the
// tracks (slab_fit.hpp).
void decide_slab_fit(StackPlan& plan, SlabFitMode mode) {
    plan.slab_fit = plan.slab_fit_auto = false;
    const double widest = widest_tilt(plan.angles);
    std::ostringstream why;
    if (mode == SlabFitMode::off) why << "config";
    else if (plan.angles.empty()) why << "off: no tilt angles";
    else if (widest > kSlabTiltLimit) why << "off: the series reaches " << widest << " degrees, beyond a slab's " << kSlabTiltLimit;
    else if (!plan.motion.translation_only()) why << "off: it fits translations, and transform is \"" << name_of(plan.motion.model) << "\"";
    else {
        plan.slab_fit = true;
        plan.slab_fit_auto = mode == SlabFitMode::automatic;
        why << (plan.slab_fit_auto ? "auto: a slab, fitted where the tracks find its content filling its depth" : "config");
    }
    plan.slab_fit_why = why.str();
}

// "auto" matches a slab's views to reprojections, along the axis only:
// there the pairs' own error is the larger (the bench's slab, 1000 photons:
// 0.109 px along the axis after the pairs with tilt_offset = "auto", 0.041
// after matching; 0.090 px gauge-free in all), and across it a limited
// range's reconstruction is biased (from the true offsets one round moved
// the views 0.31 px RMS across the axis). A whole object's views are
// placed by their centres of mass, which matching did not better on the
// bench (0.035 px against 1.39, not kept), so "auto" leaves it off there.
// `python3 bench/tilt_accuracy.py --cases slab slab-offset --variants
// pairs 'offset+pm=tilt_offset = "auto";projection_matching = true'`.
// It is the default: with the views moved by one line in sin t
// (projection_moves = "auto") it took the bench's thick slabs 0.003-0.040
// px closer at 1000 photons, the wide slab and five layers over +-70
// degrees within 0.1 px, and left no slab more than 0.007 px worse
// (`--noise 0 1000 100 --no-reference --variants defaults 'off=
// tilt_axis = "auto";projection_matching = false'`, docs/benchmarks.md).
// "auto" matches no series of fewer views: each view's reprojection is
// made from the others, and the fewest any test or bench series matched
// is 16.
constexpr std::size_t kAutoMinViews = 16;

void decide_projection_matching(StackPlan& plan, const Config& cfg) {
    const AlignmentConfig& a = cfg.alignment;
    plan.projection = {false, a.projection_iterations, a.projection_tolerance, a.projection_binning.value_or(0),
                       a.projection_thickness.value_or(0)};
    const double widest = widest_tilt(plan.angles);
    plan.projection.across = widest > kSlabTiltLimit;
    plan.projection.sine_along = a.projection_moves == ProjectionMoves::sine ||
                                 (a.projection_moves == ProjectionMoves::automatic && !plan.projection.across);
    const int smaller = std::min(plan.width, plan.height) / std::max(plan.projection.binning, 1);
    if (a.projection_matching == ProjectionMode::automatic) {
        std::ostringstream why;
        if (plan.angles.empty()) why << "auto: off, no tilt angles";
        else if (widest > kSlabTiltLimit) why << "auto: off, a whole object (the series reaches " << widest << " degrees)";
        else if (plan.setup.method != SearchMethod::window || !plan.motion.translation_only())
            why << "auto: off, it needs translations by the window search";
        else if (smaller < 16) why << "auto: off, views of " << smaller << " px are too small to match";
        else if (plan.kept.size() < kAutoMinViews)
            why << "auto: off, " << plan.kept.size() << " views are too few to reconstruct (at least " << kAutoMinViews << ")";
        else {
            plan.projection.on = true;
            why << "auto: on, a slab (every tilt within " << kSlabTiltLimit << " degrees): views moved along the axis"
                << (plan.projection.sine_along ? " by one line in sin t" : "");
        }
        plan.projection_why = why.str();
        return;
    }
    plan.projection.on = a.projection_matching == ProjectionMode::on;
    plan.projection_why = "config";
    if (!plan.projection.on) return;
    if (plan.angles.empty())
        throw ConfigError(cfg.where("alignment.projection_matching") +
                          ": projection matching reconstructs a tilt series and needs its angles ([input] angles)");
    if (plan.setup.method != SearchMethod::window)
        throw ConfigError(cfg.where("alignment.projection_matching") +
                          ": needs method = \"window\" (views are matched to reprojections by the window search)");
    if (smaller < 16)
        throw ConfigError(cfg.where(a.projection_binning ? "alignment.projection_binning" : "alignment.projection_matching") +
                          ": binned views of " + std::to_string(smaller) +
                          " pixels are too small to match (at least 16 along each side)");
}

}  // namespace stackalign
