// The apply stage's resampling on a backend: each frame moved into the
// reference's geometry. The CPU twin is src/alignment/apply.hpp's
// apply_transform; the CUDA twin evaluates the same per-pixel expressions
// (src/alignment/frame_warp.hpp) on the GPU, so the aligned stack is the
// same bytes on both; it takes the frames whose resampling costs the host
// most, leaving its cores to reading, the MRC conversion and writing.
#pragma once
#include <memory>

#include "../../src/alignment/transform.hpp"
#include "../../src/core/image.hpp"
#include "../backend.hpp"

namespace stackalign {

class FrameMover {
public:
    virtual ~FrameMover() = default;
    // `in` moved by `t` (out(X) = in(T(X))), `fill` where X has no source.
    // Several threads may call it at once.
    virtual RawFrame move(const RawFrame& in, const Transform& t, double fill) = 0;
};

// One per apply stage; `threads`: how many threads will call move at once.
std::unique_ptr<FrameMover> make_frame_mover(const Device& device, int threads);

namespace cuda {
// Frames the host moves faster (float32 shifts, small frames) stay on the
// host unless `every_frame` (the twin test).
std::unique_ptr<FrameMover> make_frame_mover(int threads, int gpu = 0, bool every_frame = false);
}

}  // namespace stackalign
