#include "stack_io.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "mrc_io.hpp"
#include "tiff_io.hpp"
#include "../core/error.hpp"
#include "../core/peak_memory.hpp"

namespace stackalign {

StackInfo probe_stack_file(const std::string& path) {
    StackInfo s;
    if (is_mrc_path(path)) {
        const MrcInfo m = probe_mrc(path);
        s.format = "mrc";
        s.frames = m.nz;
        s.width = m.nx;
        s.height = m.ny;
        s.type = m.type;
        s.pixel_size = m.pixel_size[0];
        s.mrc_mode = m.mode;
        s.signed_bytes = m.signed_bytes;
    } else {
        const TiffInfo t = probe_tiff(path);
        s.format = "tiff";
        s.frames = t.pages;
        s.width = t.width;
        s.height = t.height;
        s.type = t.type;
    }
    return s;
}

struct FrameReader::Impl {
    std::vector<std::string> files;
    // A multi-page TIFF's handles: one decodes one page at a time, so threads
    // reading at once each take a free one, opened when first needed (the
    // standard job's 121 pages of 2 MB took 0.18-0.2 s through one, as long
    // as its searchers took to align them).
    static constexpr int kTiffHandles = 4;
    std::unique_ptr<TiffPages> tiffs[kTiffHandles];  // tiffs[h] only under tiff_locks[h]
    std::mutex tiff_locks[kTiffHandles];
    bool multipage_tiff = false;
    std::unique_ptr<MrcSections> mrc;
    std::vector<std::shared_ptr<const RawFrame>> cache;
    std::size_t budget = 0, cached = 0;
    PageLocking locking;  // lock_kept_pages
    // Several searchers read frames at once: the cache is shared, and
    // decoding runs outside its lock (MRC sections are preads; a file per
    // frame opens its own).
    std::mutex lock;

    RawFrame decode(int index) {
        if (mrc) return mrc->read(index);
        if (multipage_tiff) {
            for (int h = 0; h < kTiffHandles; ++h) {
                const std::unique_lock<std::mutex> hold(tiff_locks[h], std::try_to_lock);
                if (!hold) continue;
                if (!tiffs[h]) tiffs[h] = std::make_unique<TiffPages>(files[0]);
                return tiffs[h]->read(index);
            }
            const std::lock_guard<std::mutex> hold(tiff_locks[0]);  // all busy: wait for the first
            return tiffs[0]->read(index);
        }
        return read_tiff_files({files[index]}).frames[0];
    }
};

FrameReader::FrameReader(const std::vector<std::string>& files, std::size_t cache_bytes) : impl_(std::make_shared<Impl>()) {
    impl_->files = files;
    impl_->budget = cache_bytes;
    if (files.size() == 1) {
        const StackInfo info = probe_stack_file(files[0]);
        frames_ = info.frames;
        if (info.format == "mrc") impl_->mrc = std::make_unique<MrcSections>(files[0]);
        else {
            impl_->tiffs[0] = std::make_unique<TiffPages>(files[0]);
            impl_->multipage_tiff = true;
        }
    } else {
        frames_ = int(files.size());
    }
    impl_->cache.resize(frames_);
}
FrameReader::FrameReader(const MemoryStack& held) : impl_(std::make_shared<Impl>()) {
    frames_ = int(held.frames.size());
    // Every frame already in the cache, which no budget ever empties.
    impl_->cache = held.frames;
    impl_->budget = static_cast<std::size_t>(-1);
}
FrameReader::~FrameReader() = default;

FrameReader FrameReader::in_order(std::vector<int> order) const {
    FrameReader r;
    r.impl_ = impl_;
    r.frames_ = frames_;
    r.order_ = std::move(order);
    return r;
}

void FrameReader::lock_kept_pages(PageLocking how) {
    const std::lock_guard<std::mutex> hold(impl_->lock);
    impl_->locking = std::move(how);
}

std::shared_ptr<const RawFrame> FrameReader::read(int index) {
    if (!order_.empty()) index = order_.at(index);
    Impl& m = *impl_;
    {
        const std::lock_guard<std::mutex> hold(m.lock);
        if (m.cache[index]) return m.cache[index];
    }
    auto decoded = std::make_unique<RawFrame>(m.decode(index));
    const std::size_t bytes = decoded->bytes.size();
    PageLocking how;
    {
        const std::lock_guard<std::mutex> hold(m.lock);
        if (m.cached + bytes <= m.budget && bytes >= m.locking.least_bytes) how = m.locking;
    }
    // Locked outside the cache's lock (a lock takes milliseconds); a frame
    // that is not kept after all is unlocked when its last holder lets go.
    std::function<void(void*)> unlock;
    if (how.lock && how.lock(decoded->bytes.data(), bytes)) unlock = how.unlock;
    std::shared_ptr<const RawFrame> frame(decoded.release(), [unlock](const RawFrame* f) {
        if (unlock) unlock(const_cast<unsigned char*>(f->bytes.data()));
        delete f;
    });
    const std::lock_guard<std::mutex> hold(m.lock);
    if (m.cache[index]) return m.cache[index];  // another searcher read it meanwhile
    if (m.cached + frame->bytes.size() <= m.budget) {
        m.cached += frame->bytes.size();
        m.cache[index] = frame;
    }
    return frame;
}

bool FrameReader::keeps(int count, std::size_t frame_bytes) const {
    return double(count) * double(frame_bytes) <= double(impl_->budget);
}

std::size_t frame_cache_budget(std::size_t asked) {
    if (asked) return asked;
    const std::uintmax_t memory = physical_memory_bytes();
    return memory > 0 ? std::size_t(double(memory) * 0.4) : std::size_t(1) << 30;
}

struct FrameWriter::Impl {
    std::unique_ptr<TiffStackWriter> tiff;
    std::unique_ptr<MrcStackWriter> mrc;
    // Queued frames (the one being written included): up to kQueuedBytes,
    // so a caller's next batch is made while this one is written, and at
    // least two, so one frame waits while one is written.
    static constexpr std::size_t kQueuedBytes = std::size_t(128) << 20;
    std::size_t queued_bytes = 0;
    bool room_for(std::size_t bytes) const { return queue.size() < 2 || queued_bytes + bytes <= kQueuedBytes; }
    std::mutex m;
    std::condition_variable changed;
    std::deque<Prepared> queue;
    bool closing = false, dropping = false;
    std::exception_ptr failure;
    std::thread thread;

    void write(const Prepared& f) {
        if (mrc) mrc->append(f.section);
        else tiff->append(f.frame);
    }
    void run() {
        std::unique_lock<std::mutex> lock(m);
        for (;;) {
            changed.wait(lock, [&] { return !queue.empty() || closing || dropping; });
            if (dropping || failure || queue.empty()) return;
            lock.unlock();
            std::exception_ptr error;
            try {
                write(queue.front());
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            queued_bytes -= queue.front().bytes();
            queue.pop_front();
            failure = error;
            changed.notify_all();
        }
    }
    void rethrow_failure() {
        if (failure) std::rethrow_exception(failure);
    }
};

FrameWriter::FrameWriter(const std::string& path, const std::string& format, const StackInfo& like, int frames,
                         int width, int height, PixelType type)
    : impl_(std::make_unique<Impl>()) {
    if (format == "mrc") {
        const bool keep = like.format == "mrc" && like.type == type;
        impl_->mrc = std::make_unique<MrcStackWriter>(path, keep ? like.mrc_mode : mrc_mode_for(type), like.pixel_size,
                                                      keep && like.signed_bytes, width, height, frames);
    } else {
        impl_->tiff = std::make_unique<TiffStackWriter>(
            path, frames, std::uint64_t(frames) * std::uint64_t(width) * height * bytes_per_pixel(type));
    }
    impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

FrameWriter::~FrameWriter() {
    if (!impl_->thread.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(impl_->m);
        impl_->dropping = true;
    }
    impl_->changed.notify_all();
    impl_->thread.join();
}

FrameWriter::Prepared FrameWriter::prepare(RawFrame frame) const {
    Prepared p;
    if (impl_->mrc) p.section = impl_->mrc->encode(frame);
    else p.frame = std::move(frame);
    return p;
}

void FrameWriter::append(Prepared frame) {
    std::unique_lock<std::mutex> lock(impl_->m);
    impl_->changed.wait(lock, [&] { return impl_->room_for(frame.bytes()) || impl_->failure; });
    impl_->rethrow_failure();
    impl_->queued_bytes += frame.bytes();
    impl_->queue.push_back(std::move(frame));
    impl_->changed.notify_all();
}

void FrameWriter::close() {
    {
        std::lock_guard<std::mutex> lock(impl_->m);
        impl_->closing = true;
    }
    impl_->changed.notify_all();
    impl_->thread.join();
    impl_->rethrow_failure();
    if (impl_->mrc) impl_->mrc->close();
    else impl_->tiff->close();
}

}  // namespace stackalign
