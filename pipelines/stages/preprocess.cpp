#include "preprocess.hpp"

#include <cstdlib>
#include <tuple>

#include "../../src/alignment/motion.hpp"
#include "../run_options.hpp"

namespace stackalign {

namespace {
// out(x) = in(s R (x - c) + c): the moving view as it would look turned back
// by a candidate angle and scale, bilinear (the integer search only ranks
// candidates; the refinement samples the frame itself with cubic B-splines).
// Then moved by (shift_x, shift_y) as shift_frame moves (content at x +
// shift now at x): out(x) = in(s R (x + shift - c) + c).
LinearTransform turn_back(const RawFrame& in, double angle, double scale, int shift_x, int shift_y) {
    const Transform back = rotation_scale(angle, scale).inverse();
    return {back.a11, back.a12, back.a21, back.a22, -double(shift_x), -double(shift_y), (in.width - 1) / 2.0,
            (in.height - 1) / 2.0};
}
}  // namespace

int PreparedViews::prepare(const ViewInSlot& want, int keep, const LinearTransform& stretch) {
    ++uses_;
    for (int k = 0; k < kSearcherSlots; ++k)
        if (slots_[k] == want) {
            last_used_[k] = uses_;
            return k;
        }
    auto one_pair = [](const ViewInSlot& v) {
        return v.view < 0 || v.stretched_for_pair >= 0 || v.shift_x || v.shift_y || v.angle != 0 || v.scale != 1;
    };
    // Lower is evicted first: (kept for later pairs, nearness to want, recency).
    auto rank = [&](int j) {
        return std::make_tuple(!one_pair(slots_[j]), one_pair(slots_[j]) ? 0 : -std::abs(slots_[j].view - want.view),
                               last_used_[j]);
    };
    int k = keep == 0 ? 1 : 0;
    for (int j = 0; j < kSearcherSlots; ++j)
        if (j != keep && rank(j) < rank(k)) k = j;
    const auto t = Clock::now();
    const auto read = frames_.read(want.view);
    if (!problems.count(want.view)) problems[want.view] = frame_problem(*read);
    if (want.bin > 1 && (binned_view_ != want.view || binned_factor_ != want.bin)) {
        binned_ = block_mean(*read, want.bin);
        binned_mean_ = binned_.mean();
        binned_view_ = want.view, binned_factor_ = want.bin;
    }
    const RawFrame& frame = want.bin > 1 ? binned_ : *read;
    auto fill = [&] {
        if (want.bin > 1) return binned_mean_;
        const auto known = means_.find(want.view);
        return known != means_.end() ? known->second : means_[want.view] = frame.mean();
    };
    if (want.stretched_for_pair >= 0) searcher_.load_warped(k, frame, stretch, fill());
    else if (want.angle != 0 || want.scale != 1)
        searcher_.load_warped(k, frame, turn_back(frame, want.angle, want.scale, want.shift_x, want.shift_y), fill());
    else if (want.shift_x || want.shift_y) searcher_.load(k, shift_frame(frame, want.shift_x, want.shift_y, fill()));
    else searcher_.load(k, frame);
    seconds += seconds_since(t);
    slots_[k] = want;
    last_used_[k] = uses_;
    ++loads;
    return k;
}

}  // namespace stackalign
