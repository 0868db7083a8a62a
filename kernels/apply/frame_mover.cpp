#include "frame_mover.hpp"

#include "../../src/alignment/apply.hpp"

namespace stackalign {
namespace {

class CpuFrameMover final : public FrameMover {
public:
    RawFrame move(const RawFrame& in, const Transform& t, double fill) override { return apply_transform(in, t, fill); }
};

}  // namespace

std::unique_ptr<FrameMover> make_frame_mover(const Device& device, int threads) {
    if (device.backend == Backend::cuda) return cuda::make_frame_mover(threads, device.gpu);
    return std::make_unique<CpuFrameMover>();
}

}  // namespace stackalign
