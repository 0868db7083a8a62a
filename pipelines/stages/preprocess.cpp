#include "preprocess.hpp"

#include "../run_options.hpp"

namespace stackalign {

int PreparedViews::prepare(const ViewInSlot& want, int keep, const LinearTransform& stretch) {
    for (int k = 0; k < 2; ++k)
        if (slots_[k] == want) return k;
    const int k = keep == 0 ? 1 : 0;
    const auto t = Clock::now();
    const auto frame = frames_.read(want.view);
    if (!problems.count(want.view)) problems[want.view] = frame_problem(*frame);
    if (want.stretched_for_pair >= 0) searcher_.load(k, transform_frame(*frame, stretch, frame->mean()));
    else if (want.shift_x || want.shift_y) searcher_.load(k, shift_frame(*frame, want.shift_x, want.shift_y, frame->mean()));
    else searcher_.load(k, *frame);
    seconds += seconds_since(t);
    slots_[k] = want;
    return k;
}

}  // namespace stackalign
