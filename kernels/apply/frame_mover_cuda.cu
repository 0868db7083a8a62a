// The CUDA twin of the apply stage's resampling (frame_mover.hpp): a frame
// goes up, is moved by one kernel and comes back, on one of a few slots
// (a stream and two buffers each), so the apply stage's threads move
// several frames at once while others are read, converted and written.
#include <algorithm>
#include <condition_variable>
#include <cmath>
#include <mutex>
#include <type_traits>
#include <vector>

#include "../../src/alignment/apply.hpp"
#include "../../src/alignment/frame_warp.hpp"
#include "../cuda_common.cuh"
#include "frame_mover.hpp"
#include "warp_kernel.cuh"

namespace stackalign::cuda {
namespace {

// shift_frame's pixel (src/alignment/apply.cpp): whole shifts copy, others
// blend the four neighbours; `fill` where the source falls outside.
template <typename T>
__global__ void shift_pixels(const T* __restrict__ in, T* __restrict__ out, int w, int h, double dx, double dy,
                             bool whole, T fill) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= w) return;
    T v = fill;
    if (whole) {
        const int ix = x + int(dx), iy = y + int(dy);
        if (ix >= 0 && ix < w && iy >= 0 && iy < h) v = in[std::size_t(iy) * w + ix];
    } else {
        const double sx = x + dx, sy = y + dy;
        if (!(sx < 0 || sy < 0 || sx > w - 1 || sy > h - 1)) {
            const int x0 = min(int(sx), w - 1), y0 = min(int(sy), h - 1);
            const int x1 = min(x0 + 1, w - 1), y1 = min(y0 + 1, h - 1);
            v = blend_pixel(in + std::size_t(y0) * w, in + std::size_t(y1) * w, x0, x1, sx - x0, sy - y0);
        }
    }
    out[std::size_t(y) * w + x] = v;
}

// Device memory the slots may hold together: frames beyond it share fewer slots.
constexpr std::size_t kSlotBytes = std::size_t(1) << 30;

// Where the round trip pays (H100 machine, 15 host threads, 2026-11-25):
// 121 shifted 1024^2 16-bit frames took the host 0.21-0.30 s and the GPU
// 0.10-0.13 s, but shifted float32 frames, which the host moves without
// rounding, took the GPU longer (512^2: 0.04-0.05 s against 0.02-0.03;
// 384^2 and 144x119 likewise). Turned 1024^2 float32 frames: 0.08-0.10 s
// on the GPU against 0.19-0.20 s. So integer frames and turned frames (the
// host's slowest loops) of at least 2^18 pixels go to the GPU.
bool worth_the_gpu(const RawFrame& in, const Transform& t) {
    return in.pixel_count() >= (std::size_t(1) << 18) && (in.type != PixelType::f32 || !t.is_translation());
}

class CudaFrameMover final : public FrameMover {
public:
    CudaFrameMover(int threads, int gpu, bool every_frame)
        : gpu_(gpu), threads_(std::max(threads, 1)), every_frame_(every_frame) {}

    RawFrame move(const RawFrame& in, const Transform& t, double fill) override {
        if (!every_frame_ && !worth_the_gpu(in, t)) return apply_transform(in, t, fill);  // the same bytes
        select_device(gpu_);  // per calling thread
        Slot& slot = take(in.bytes.size());
        try {
            RawFrame out = run(slot, in, t, fill);
            give(slot);
            return out;
        } catch (...) {
            give(slot);
            throw;
        }
    }

private:
    struct Slot {
        Stream stream;
        DeviceBuffer<unsigned char> in, out;
        bool busy = false;
    };

    Slot& take(std::size_t bytes) {
        std::unique_lock<std::mutex> hold(lock_);
        const std::size_t most = std::clamp<std::size_t>(kSlotBytes / std::max<std::size_t>(2 * bytes, 1), 1, threads_);
        for (;;) {
            for (auto& s : slots_)
                if (!s->busy) {
                    s->busy = true;
                    return *s;
                }
            if (slots_.size() < most) {
                slots_.push_back(std::make_unique<Slot>());
                slots_.back()->busy = true;
                return *slots_.back();
            }
            freed_.wait(hold);
        }
    }
    void give(Slot& s) {
        {
            const std::lock_guard<std::mutex> hold(lock_);
            s.busy = false;
        }
        freed_.notify_one();
    }

    RawFrame run(Slot& s, const RawFrame& in, const Transform& t, double fill) {
        RawFrame out = in.like();
        if (in.bytes.empty()) return out;
        s.in.reserve(in.bytes.size());
        s.out.reserve(in.bytes.size());
        CUDA_CHECK(cudaMemcpyAsync(s.in.get(), in.bytes.data(), in.bytes.size(), cudaMemcpyHostToDevice, s.stream));
        const int w = in.width, h = in.height, threads = 128;  // stack frames: depth 1
        const dim3 grid((w + threads - 1) / threads, h);
        visit_pixels(in, [&](const auto* p) {
            using T = std::remove_const_t<std::remove_pointer_t<decltype(p)>>;
            const T* src = reinterpret_cast<const T*>(s.in.get());
            T* dst = reinterpret_cast<T*>(s.out.get());
            if (t.is_translation()) {
                const bool whole = t.dx == std::floor(t.dx) && t.dy == std::floor(t.dy);
                shift_pixels<T><<<grid, threads, 0, s.stream>>>(src, dst, w, h, t.dx, t.dy, whole, warp_to_pixel<T>(fill));
            } else {
                warp_pixels<T><<<grid, threads, 0, s.stream>>>(src, dst, w, h, apply_warp(t, w, h, fill));
            }
        });
        CUDA_CHECK_LAUNCH("moving a frame");
        CUDA_CHECK(cudaMemcpyAsync(out.bytes.data(), s.out.get(), out.bytes.size(), cudaMemcpyDeviceToHost, s.stream));
        CUDA_CHECK(cudaStreamSynchronize(s.stream));
        return out;
    }

    int gpu_;
    std::size_t threads_;
    bool every_frame_;
    std::mutex lock_;
    std::condition_variable freed_;
    std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace

std::unique_ptr<FrameMover> make_frame_mover(int threads, int gpu, bool every_frame) {
    select_device(gpu);
    return std::make_unique<CudaFrameMover>(threads, gpu, every_frame);
}

}  // namespace stackalign::cuda
