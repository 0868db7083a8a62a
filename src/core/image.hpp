// In-memory images. Frames keep their file's pixel type so that an integer
// shift can be applied exactly and the aligned stack is written back in the
// type it came in; algorithms work on float or bin images derived from them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace stackalign {

enum class PixelType { u8, u16, i16, i32, f32 };

// Whether a CPU load filters an image of `pixels` on the calling thread's
// OpenMP threads (else on the calling thread alone): from 2^16
// pixels, or from 2^14 with 4 threads or more. Below that a parallel
// region costs more than the loop saves: a 144 x 119 frame's CPU load took
// 167-171 us on one thread of the 2-core EPYC and 179-253 us on both
// (bench/probes/load_steps.cpp), and the X-ray-sized job's loads on 2
// threads of the H100 host 15 % less time without them; on its searchers
// of 4 threads those frames' loads still gained from them, 64 x 64 ones not.
bool parallel_filter(std::size_t pixels);

// A row of `width` samples copied into padded[radius .. radius + width),
// its first and last sample repeated `radius` times on each side: the
// clamped edges of a CPU filter's row, so its taps run without clamps.
inline void pad_row(const float* row, int width, int radius, float* padded) {
    for (int i = 0; i < radius; ++i) padded[i] = row[0], padded[width + radius + i] = row[width - 1];
    for (int x = 0; x < width; ++x) padded[radius + x] = row[x];
}

std::string to_string(PixelType t);
std::size_t bytes_per_pixel(PixelType t);

// std::allocator, except that a vector's new elements are left as the
// memory has them where no value is given (resize(n), not resize(n, v)).
// Why: an image every pixel of which a parallel pass is about to write was
// zeroed first by one thread, which also took every page fault: 40 ms for
// a 61 MB volume on the 2-core machine, five of them in a volume's load.
// Left unwritten, its pages are touched first by the pass's own threads.
template <typename T>
struct UninitialisedAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
        using other = UninitialisedAllocator<U>;
    };
    UninitialisedAllocator() = default;
    template <typename U>
    UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}
    template <typename U>
    void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
        ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

// A frame, or a volume when depth > 1 (slices of width x height, z-major).
template <typename T>
struct Image {
    int width = 0;
    int height = 0;
    int depth = 1;
    std::vector<T, UninitialisedAllocator<T>> pixels;  // row-major, width * height * depth

    Image() = default;
    Image(int w, int h, T fill = T{}) : width(w), height(h), pixels(std::size_t(w) * h, fill) {}
    static Image volume(int w, int h, int d, T fill = T{}) {
        Image v = for_overwrite(w, h, d);
        v.pixels.assign(v.pixels.size(), fill);
        return v;
    }
    // Pixels left unset, for a pass that writes every one of them.
    static Image for_overwrite(int w, int h, int d = 1) {
        Image v;
        v.width = w;
        v.height = h;
        v.depth = d;
        v.pixels.resize(std::size_t(w) * h * d);
        return v;
    }
    T& at(int x, int y) { return pixels[std::size_t(y) * width + x]; }
    const T& at(int x, int y) const { return pixels[std::size_t(y) * width + x]; }
    T& at(int x, int y, int z) { return pixels[(std::size_t(z) * height + y) * width + x]; }
    const T& at(int x, int y, int z) const { return pixels[(std::size_t(z) * height + y) * width + x]; }
    std::size_t size() const { return pixels.size(); }
};

using ImageF = Image<float>;
using BinImage = Image<std::uint8_t>;  // quantized frame: bin index per pixel, bins <= 256

// A frame as read from disk: raw pixels of one type. A volume is a RawFrame
// with depth > 1 (the pages of a multi-page TIFF, z-major).
struct RawFrame {
    PixelType type = PixelType::u8;
    int width = 0;
    int height = 0;
    int depth = 1;
    std::vector<unsigned char> bytes;

    std::size_t pixel_count() const { return std::size_t(width) * height * depth; }
    ImageF to_float() const;
    double mean() const;
    // A frame of this one's shape and type whose pixels are all about to be written.
    RawFrame like() const {
        RawFrame out;
        out.type = type;
        out.width = width;
        out.height = height;
        out.depth = depth;
        out.bytes.resize(bytes.size());
        return out;
    }
};

// Means of factor x factor blocks of a 2D frame (a partial last row or
// column of blocks is dropped), as float32: a coarser level of a search.
RawFrame block_mean(const RawFrame& frame, int factor);

// What makes a frame unusable for alignment, in words ("empty: every pixel
// is 0", "constant: ...", "12 of 4096 pixels are NaN or infinite"), or ""
// when it has some contrast and no non-finite pixel.
std::string frame_problem(const RawFrame& frame);

struct Stack {
    std::vector<RawFrame> frames;
    std::vector<std::string> sources;  // per frame: "file" or "file page N", for messages
    int width() const { return frames.empty() ? 0 : frames[0].width; }
    int height() const { return frames.empty() ? 0 : frames[0].height; }
    PixelType type() const { return frames.empty() ? PixelType::u8 : frames[0].type; }
    int size() const { return int(frames.size()); }
};

// Calls f with a typed pointer to the frame's pixels.
template <typename F>
decltype(auto) visit_pixels(const RawFrame& frame, F&& f) {
    const void* p = frame.bytes.data();
    switch (frame.type) {
        case PixelType::u8: return f(static_cast<const std::uint8_t*>(p));
        case PixelType::u16: return f(static_cast<const std::uint16_t*>(p));
        case PixelType::i16: return f(static_cast<const std::int16_t*>(p));
        case PixelType::i32: return f(static_cast<const std::int32_t*>(p));
        case PixelType::f32: default: return f(static_cast<const float*>(p));
    }
}
template <typename F>
decltype(auto) visit_pixels(RawFrame& frame, F&& f) {
    void* p = frame.bytes.data();
    switch (frame.type) {
        case PixelType::u8: return f(static_cast<std::uint8_t*>(p));
        case PixelType::u16: return f(static_cast<std::uint16_t*>(p));
        case PixelType::i16: return f(static_cast<std::int16_t*>(p));
        case PixelType::i32: return f(static_cast<std::int32_t*>(p));
        case PixelType::f32: default: return f(static_cast<float*>(p));
    }
}

}  // namespace stackalign
