#include "preprocess.hpp"

#include <cstdlib>
#include <tuple>

#include "../../kernels/cuda_api.hpp"
#include "../../src/alignment/motion.hpp"
#include "../run_options.hpp"

namespace stackalign {

PageLocking gpu_page_locking(int gpu) {
    PageLocking how;
    how.lock = [gpu](void* data, std::size_t bytes) { return cuda::lock_pages(data, bytes, gpu); };
    how.unlock = [](void* data) { cuda::unlock_pages(data); };
    how.least_bytes = cuda::kLockLeastBytes;
    return how;
}

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

// known[view], else make()'s answer, made outside the lock (a pass over a
// frame) and kept unless another searcher kept one meanwhile.
template <typename V, typename Make>
V ReadViews::remember(std::map<int, V>& known, int view, const Make& make) {
    {
        const std::lock_guard<std::mutex> hold(lock_);
        if (const auto k = known.find(view); k != known.end()) return k->second;
    }
    V made = make();
    const std::lock_guard<std::mutex> hold(lock_);
    return known.emplace(view, std::move(made)).first->second;
}

std::shared_ptr<const RawFrame> ReadViews::read(int view) {
    auto frame = frames_.read(view);
    remember(checked_, view, [&] { return frame_problem(*frame); });
    return frame;
}

double ReadViews::mean(int view) {
    return remember(means_, view, [&] { return read(view)->mean(); });
}

ReadViews::Binned ReadViews::binned(int view, int factor) {
    const std::pair<int, int> key{view, factor};
    {
        const std::lock_guard<std::mutex> hold(lock_);
        for (const auto& [k, b] : binned_)
            if (k == key) return b;
    }
    Binned b;
    auto frame = std::make_shared<const RawFrame>(block_mean(*read(view), factor));
    b.mean = frame->mean();
    b.frame = std::move(frame);
    const std::lock_guard<std::mutex> hold(lock_);
    for (const auto& [k, known] : binned_)
        if (k == key) return known;  // binned by another searcher meanwhile
    binned_.emplace_back(key, b);
    if (binned_.size() > kBinnedKept) binned_.pop_front();
    return b;
}

std::map<int, std::string> ReadViews::problems() const {
    const std::lock_guard<std::mutex> hold(lock_);
    std::map<int, std::string> out;
    for (const auto& [view, problem] : checked_)
        if (!problem.empty()) out.emplace(view, problem);
    return out;
}

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
    ReadViews::Binned binned;
    if (want.bin > 1) binned = views_.binned(want.view, want.bin);
    const std::shared_ptr<const RawFrame> read = want.bin > 1 ? binned.frame : views_.read(want.view);
    const RawFrame& frame = *read;
    const bool turned = want.angle != 0 || want.scale != 1;
    const bool moved_copy = want.stretched_for_pair < 0 && !turned && (want.shift_x || want.shift_y);
    // The fill of a warped copy's uncovered pixels: the view's mean.
    const bool warped = want.stretched_for_pair >= 0 || turned || moved_copy;
    const double fill = warped ? (want.bin > 1 ? binned.mean : views_.mean(want.view)) : 0.0;
    reading_seconds += seconds_since(t);
    // A turned candidate is only ranked by the search; the refinement samples the view itself.
    const LoadOptions how = load_options(!turned, read == last_loaded_);
    last_loaded_ = nullptr;  // until the load is through
    if (want.stretched_for_pair >= 0) searcher_.load_warped(k, frame, stretch, fill, how);
    else if (turned)
        searcher_.load_warped(k, frame, turn_back(frame, want.angle, want.scale, want.shift_x, want.shift_y), fill, how);
    else if (moved_copy) searcher_.load(k, shift_frame(frame, want.shift_x, want.shift_y, fill));
    else searcher_.load(k, frame, how);
    if (!moved_copy) last_loaded_ = read;
    seconds += seconds_since(t);
    slots_[k] = want;
    last_used_[k] = uses_;
    ++loads;
    return k;
}

}  // namespace stackalign
