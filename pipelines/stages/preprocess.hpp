// Preprocess stage: a view as the search needs it, read (stretched for one
// pair when cosine stretching is on) and preprocessed by the searcher's
// backend into one of its slots. A view as read stays in its slot while
// views nearer the pairs being searched need none, so it is preprocessed
// once for its two neighbour pairs and its skip pair; a copy made for one
// pair (stretched, moved, turned) is the first to go.
#pragma once
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "../../kernels/pair_searcher.hpp"
#include "../../src/alignment/apply.hpp"
#include "../../src/io/stack_io.hpp"

namespace stackalign {

// The page-locking a CUDA job on `gpu` gives the frames its FrameReader
// keeps (FrameReader::lock_kept_pages): frames of cuda::kLockLeastBytes
// and more (kernels/cuda_api.hpp says why), through cuda::lock_pages.
PageLocking gpu_page_locking(int gpu);

// What a searcher slot holds: a view, as read or stretched for one pair.
struct ViewInSlot {
    int view = -1;
    int stretched_for_pair = -1;  // -1: the view as read
    int shift_x = 0, shift_y = 0;  // moved by whole pixels: content at x + shift now at x
    // Turned and scaled about the frame centre c for a rigid or similarity
    // search candidate: content at s R(angle) (x - c) + c now at x (then
    // moved by the shift, when there is one: at s R(angle) (x + shift - c) + c).
    double angle = 0, scale = 1;
    int bin = 1;  // block means of bin x bin pixels first (a search's coarse level)
    bool operator==(const ViewInSlot& o) const {
        return view == o.view && stretched_for_pair == o.stretched_for_pair && shift_x == o.shift_x &&
               shift_y == o.shift_y && angle == o.angle && scale == o.scale && bin == o.bin;
    }
};

// The views as read, shared by every searcher (and search level) of a job:
// each view is checked (frame_problem) when first read, and its mean (the
// fill of its warped copies) and block means are made once, by whichever
// searcher needs them first. Safe to use from several threads.
class ReadViews {
public:
    explicit ReadViews(FrameReader& frames) : frames_(frames) {}
    std::shared_ptr<const RawFrame> read(int view);
    double mean(int view);
    // Block means of factor x factor pixels (block_mean), with their mean.
    struct Binned {
        std::shared_ptr<const RawFrame> frame;
        double mean = 0;
    };
    Binned binned(int view, int factor);
    // Views read so far that cannot be aligned (empty, constant, non-finite),
    // with the reason (frame_problem).
    std::map<int, std::string> problems() const;

private:
    template <typename V, typename Make>
    V remember(std::map<int, V>& known, int view, const Make& make);
    FrameReader& frames_;
    mutable std::mutex lock_;
    std::map<int, std::string> checked_;  // every view read so far: "" when it can be aligned
    std::map<int, double> means_;
    // The last few views binned: a view is binned for its two neighbour
    // pairs, by the searchers at work (a series may not fit in memory).
    static constexpr std::size_t kBinnedKept = 16;
    std::deque<std::pair<std::pair<int, int>, Binned>> binned_;
};

class PreparedViews {
public:
    PreparedViews(PairSearcher& searcher, ReadViews& views) : searcher_(searcher), views_(views) {}
    // The slot holding `want`, preprocessed now unless a slot holds it
    // already, into a slot that is not `keep`: an empty one, else the oldest
    // one-pair copy, else the view farthest from want.view (pairs are
    // searched outward from the reference, so that one is needed last).
    // `stretch` is applied first when want.stretched_for_pair >= 0.
    int prepare(const ViewInSlot& want, int keep, const LinearTransform& stretch);
    double seconds = 0;  // spent reading, stretching and preprocessing
    double reading_seconds = 0;  // of which reading and checking views (or waiting for another thread's read)
    int loads = 0;       // views preprocessed into a slot

private:
    PairSearcher& searcher_;
    ReadViews& views_;
    ViewInSlot slots_[kSearcherSlots];
    // The frame the searcher was last given as read (not a moved copy), held
    // so that the same pointer means the same frame.
    std::shared_ptr<const RawFrame> last_loaded_;
    long long last_used_[kSearcherSlots] = {};
    long long uses_ = 0;
};

}  // namespace stackalign
