// One place that knows which file format a stack is in: multi-page TIFF or
// MRC (by suffix, see is_mrc_path). The pipeline reads and writes through
// here and never asks which.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../core/image.hpp"
#include "mrc_io.hpp"

namespace stackalign {

struct StackInfo {
    std::string format;          // "tiff" | "mrc"
    int frames = 0, width = 0, height = 0;
    PixelType type = PixelType::u8;
    double pixel_size = 0;       // Angstrom per pixel (MRC cell); 0 = not recorded
    int mrc_mode = -1;           // MRC input: its mode, so output can keep it
    bool signed_bytes = false;
};

StackInfo probe_stack_file(const std::string& path);

// A series the caller holds in memory (the Python module's array) in place
// of a file: its frames, as a file's would be read, and what the file's
// header would say of them.
struct MemoryStack {
    StackInfo info;
    std::vector<std::shared_ptr<const RawFrame>> frames;
};

// Page-locking of the frames a FrameReader keeps, given by the layer that
// knows the GPU (the pipeline, from kernels/cuda_api.hpp): `lock` says
// whether it locked the bytes, `unlock` is called before they are freed.
struct PageLocking {
    std::function<bool(void*, std::size_t)> lock;
    std::function<void(void*)> unlock;
    std::size_t least_bytes = 0;  // frames smaller than this are not locked
};

// Frames of a series read on demand: one multi-frame file (TIFF pages, MRC
// sections) or one TIFF per frame. Frames are kept in memory while they fit
// in `cache_bytes`, so a series that fits is read once, and one that does
// not is streamed (each step reads only the frames it needs).
class FrameReader {
public:
    FrameReader(const std::vector<std::string>& files, std::size_t cache_bytes);
    // Frames held in memory: none is read or decoded, each is kept as it is.
    explicit FrameReader(const MemoryStack& held);
    ~FrameReader();
    int size() const { return frames_; }
    std::shared_ptr<const RawFrame> read(int index);
    // Whether `count` frames of `frame_bytes` each fit in the cache.
    bool keeps(int count, std::size_t frame_bytes) const;
    // The same frames, read(k) giving the file's frame order[k] (a series
    // stored in acquisition order, aligned in tilt order); empty: the file's
    // order. The reader returned shares this one's files and cache.
    FrameReader in_order(std::vector<int> order) const;
    // Frames read from now on and kept in the cache are page-locked, for
    // this reader and every one sharing its cache: each is copied to the GPU
    // several times (every pair and skip that holds it, the chance searches,
    // the tracks), and a copy from pageable memory goes through the
    // driver's own staging buffer, which the searchers' copies share.
    void lock_kept_pages(PageLocking how);

private:
    FrameReader() = default;
    struct Impl;
    std::shared_ptr<Impl> impl_;
    std::vector<int> order_;
    int frames_ = 0;
};

// Bytes of memory for keeping input frames: `asked` (--cache-mb), or where
// it is 0, 40% of physical memory.
std::size_t frame_cache_budget(std::size_t asked);

// Frames written one at a time as `format`. MRC output keeps `like`'s mode
// when `like` is MRC and the frames' type matches it, else the mode for the
// frames' type; the pixel size goes into the MRC cell.
// A frame goes in two steps: prepare() makes it ready for the file (an MRC
// section converted to the stack's mode, with its statistics: most of a
// section's cost) and may run on several threads at once; append() queues
// the prepared frames, in order, for a thread of the writer's own that
// writes them, so the caller makes the next frames meanwhile. append()
// returns once the frame is queued (it waits while 128 MB and two frames
// are), and a write's error is thrown by the next append() or by close(),
// which returns when every frame is in the file.
// Destroyed without close(), the writer drops what is queued.
class FrameWriter {
public:
    struct Prepared {
        RawFrame frame;      // TIFF: the frame as given
        MrcSection section;  // MRC
        std::size_t bytes() const { return frame.bytes.size() + section.bytes.size(); }
    };
    FrameWriter(const std::string& path, const std::string& format, const StackInfo& like, int frames, int width,
                int height, PixelType type);
    ~FrameWriter();
    Prepared prepare(RawFrame frame) const;
    void append(Prepared frame);
    void close();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace stackalign
