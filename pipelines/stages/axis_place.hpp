// The tilt axis's place across a slab's views: every view moved alike until
// the reconstruction about the views' centre is sharpest
// (src/alignment/axis_sharpness.hpp says why that measure). A whole object
// placed by its centres of mass is left as it is: its moments put the axis
// at the centre already.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "../../src/io/stack_io.hpp"
#include "../../src/output/frame_tables.hpp"
#include "../plan/stack_plan.hpp"
#include "search_pairs.hpp"

namespace stackalign {

struct AxisPlace {
    bool ran = false;
    std::string why;     // why not, when it did not run or moved nothing
    bool moved = false;  // the views were moved
    double shift_px = 0;  // the sharpest's place across the axis from the offsets', frame px (+: the views
                          // sampled further along +x of the grid); the move where `moved`
    int binning = 0, thickness = 0;            // the far scan's views and depth (binned px)
    std::vector<double> shifts_px, sharpness;  // the far scan
    int near_binning = 0;                      // then at twice the resolution, near: its binning and move
    double near_shift_px = 0;
    double seconds = 0;
};

// Every view's offset in `results` moved across the axis by the place found
// (a tilt series that is no whole object placed by its moments; found
// inside the scan, and at least 1.5 px from the offsets' place).
AxisPlace place_axis_by_sharpness(const StackPlan& plan, FrameReader& frames, const PairSearch& search,
                                  std::vector<FrameResult>& results, bool placed_whole, Verbosity verbosity);

nlohmann::ordered_json axis_place_record(const AxisPlace& a);

}  // namespace stackalign
