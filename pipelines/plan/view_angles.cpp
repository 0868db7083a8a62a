#include "view_angles.hpp"

#include <algorithm>
#include <cmath>

#include "../../src/core/error.hpp"
#include "../../src/io/mdoc.hpp"
#include "../../src/io/tilt_angles.hpp"

namespace stackalign {

namespace {

// Views in tilt order where the file's are not (ascending or descending):
// a series saved as acquired (dose-symmetric: 0, +3, -3, -6, +6, ...) would
// otherwise be aligned pair by pair between views far apart in tilt.
void put_in_tilt_order(StackPlan& plan) {
    const std::vector<double>& a = plan.angles;
    if (std::is_sorted(a.begin(), a.end()) || std::is_sorted(a.rbegin(), a.rend())) return;
    std::vector<int> order(a.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = int(k);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return a[x] < a[y]; });
    std::vector<double> sorted;
    for (int f : order) sorted.push_back(a[f]);
    plan.angles = sorted;
    plan.view_order = order;
}

}  // namespace

int StackPlan::view_of_frame(int frame) const {
    if (view_order.empty()) return frame;
    return int(std::find(view_order.begin(), view_order.end(), frame) - view_order.begin());
}

void plan_angles(const Config& cfg, StackPlan& plan) {
    // Angles: the file given (.tlt or SerialEM .mdoc), else the .mdoc
    // SerialEM writes beside the stack or the one that names the views'
    // files, else a range.
    std::string angles_file = cfg.input.angles_file;
    plan.angles_from = angles_file;
    if (angles_file.empty() && !cfg.input.angles_range && !cfg.input.stack.empty()) {
        angles_file = mdoc_beside(cfg.input.stack);
        if (!angles_file.empty()) plan.angles_from = angles_file + " (beside the stack)";
    }
    if (angles_file.empty() && !cfg.input.angles_range && is_mdoc(cfg.input.files)) {
        angles_file = cfg.input.files;  // the .mdoc that names the views' files
        plan.angles_from = angles_file + " (the views' .mdoc)";
    }
    if (!angles_file.empty()) {
        if (is_mdoc(angles_file)) {
            const Mdoc mdoc = read_mdoc(angles_file);
            plan.angles = mdoc.tilts();
            plan.mdoc_tilt_axis = mdoc.tilt_axis;
            if (mdoc.pixel_spacing && !plan.input.pixel_size) plan.input.pixel_size = *mdoc.pixel_spacing;
        } else {
            plan.angles = read_tilt_angles(angles_file);
        }
        if (int(plan.angles.size()) != plan.frames)
            throw InputError(angles_file + ": has " + std::to_string(plan.angles.size()) +
                             (is_mdoc(angles_file) ? " views ([ZValue] sections)" : " tilt angles") + " but the stack " +
                             (plan.files.size() == 1 ? plan.files[0] + " " : "") + "has " + std::to_string(plan.frames) +
                             " frames; give one angle per frame");
        put_in_tilt_order(plan);
    } else if (cfg.input.angles_range) {
        plan.angles_from = "range";
        plan.angles = tilt_range((*cfg.input.angles_range)[0], (*cfg.input.angles_range)[1], plan.frames);
        for (double t : plan.angles)
            if (std::fabs(t) > 90)
                throw ConfigError(cfg.where("input.angles") + ": start + step x " + std::to_string(plan.frames - 1) +
                                  " frames reaches " + std::to_string(t) + " degrees, outside -90..90");
    }
    // A tilt offset: given, added to every angle here; "auto", estimated
    // before the search (resolve_tilt_axis).
    plan.tilt_offset_asked = cfg.lines.count("alignment.tilt_offset") > 0;
    if (plan.tilt_offset_asked && plan.angles.empty())
        throw ConfigError(cfg.where("alignment.tilt_offset") + ": a tilt offset corrects a tilt series' angles and needs "
                          "them ([input] angles)");
    plan.tilt_offset_auto = cfg.alignment.tilt_offset_auto && !plan.angles.empty();
    plan.tilt_offset_levelling = plan.tilt_offset_auto;
    plan.tilt_offset = cfg.alignment.tilt_offset_auto ? 0.0 : cfg.alignment.tilt_offset;
    if (plan.tilt_offset != 0)
        for (double& t : plan.angles) {
            t += plan.tilt_offset;
            if (std::fabs(t) > 90)
                throw ConfigError(cfg.where("alignment.tilt_offset") + ": " + std::to_string(plan.tilt_offset) +
                                  " degrees takes a view to " + std::to_string(t) + ", beyond 90");
        }
}

}  // namespace stackalign
