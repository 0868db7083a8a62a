#include <doctest/doctest.h>
#include <omp.h>
#include <tiffio.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "../src/core/error.hpp"
#include "../src/io/stack_io.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

RawFrame pattern_frame(PixelType type, int w, int h, int seed) {
    const double offset = type == PixelType::i16 || type == PixelType::i32 ? 100 : 0;
    std::vector<double> values(std::size_t(w) * h);
    for (int i = 0; i < w * h; ++i) values[i] = (i * 37 + seed * 101) % 251 - offset;
    return frame_of(type, w, h, values);
}

// Writes a TIFF with libtiff directly, for layouts our writer never makes.
void write_raw_tiff(const std::string& path, const char* mode, int w, int h, int spp, int bits, int format,
                    bool tiled, int pages = 1, int second_width = 0) {
    TIFF* t = TIFFOpen(path.c_str(), mode);
    REQUIRE(t);
    for (int p = 0; p < pages; ++p) {
        const int pw = (p == 1 && second_width) ? second_width : w;
        TIFFSetField(t, TIFFTAG_IMAGEWIDTH, pw);
        TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
        TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp);
        TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits);
        TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, format);
        TIFFSetField(t, TIFFTAG_PHOTOMETRIC, spp == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
        TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
        const std::size_t row = (std::size_t(pw) * spp * bits + 7) / 8;
        if (tiled) {
            TIFFSetField(t, TIFFTAG_TILEWIDTH, 16);
            TIFFSetField(t, TIFFTAG_TILELENGTH, 16);
            std::vector<unsigned char> tile(TIFFTileSize(t));
            for (int ty = 0; ty < h; ty += 16)
                for (int tx = 0; tx < pw; tx += 16) {
                    for (int r = 0; r < 16; ++r)
                        for (int c = 0; c < 16; ++c)
                            tile[r * 16 + c] = (ty + r < h && tx + c < pw) ? std::uint8_t((ty + r) * 3 + (tx + c)) : 0;
                    TIFFWriteTile(t, tile.data(), tx, ty, 0, 0);
                }
        } else {
            std::vector<unsigned char> buf(row * h);
            for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = std::uint8_t(i);
            TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, h);
            TIFFWriteEncodedStrip(t, 0, buf.data(), buf.size());
        }
        TIFFWriteDirectory(t);
    }
    TIFFClose(t);
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no InputError)";
}

}  // namespace

TEST_CASE("tiff: every pixel type survives a multi-page round trip") {
    const std::string dir = temp_dir("tiff_round_trip");
    for (PixelType type : {PixelType::u8, PixelType::u16, PixelType::i16, PixelType::i32, PixelType::f32}) {
        CAPTURE(to_string(type));
        std::vector<RawFrame> frames = {pattern_frame(type, 37, 23, 1), pattern_frame(type, 37, 23, 2),
                                        pattern_frame(type, 37, 23, 3)};
        const std::string path = dir + "/" + to_string(type) + ".tif";
        write_tiff_stack(path, frames);
        const TiffInfo info = probe_tiff(path);
        CHECK(info.pages == 3);
        CHECK(info.width == 37);
        CHECK(info.height == 23);
        CHECK(info.type == type);
        const Stack back = read_tiff_stack(path);
        REQUIRE(back.size() == 3);
        for (int i = 0; i < 3; ++i) CHECK(back.frames[i].bytes == frames[i].bytes);
        CHECK(back.sources[2] == path + " page 2");
    }
}

TEST_CASE("tiff: tiled and BigTIFF files read like striped ones") {
    const std::string dir = temp_dir("tiff_layouts");
    write_raw_tiff(dir + "/tiled.tif", "w", 40, 35, 1, 8, SAMPLEFORMAT_UINT, true);
    const Stack tiled = read_tiff_stack(dir + "/tiled.tif");
    REQUIRE(tiled.size() == 1);
    CHECK(tiled.frames[0].width == 40);
    CHECK(tiled.frames[0].height == 35);
    // Pixel (x, y) was written as y*3 + x.
    CHECK(tiled.frames[0].bytes[34 * 40 + 39] == std::uint8_t(34 * 3 + 39));
    CHECK(tiled.frames[0].bytes[17 * 40 + 5] == std::uint8_t(17 * 3 + 5));

    write_raw_tiff(dir + "/big.tif", "w8", 20, 10, 1, 16, SAMPLEFORMAT_UINT, false, 2);
    const Stack big = read_tiff_stack(dir + "/big.tif");
    CHECK(big.size() == 2);
    CHECK(big.type() == PixelType::u16);
}

TEST_CASE("tiff: bad inputs are errors that name the file, page and problem") {
    const std::string dir = temp_dir("tiff_bad");
    CHECK(error_of([&] { read_tiff_stack(dir + "/missing.tif"); }).find("missing.tif: cannot open") != std::string::npos);

    write_text(dir + "/text.tif", "this is not a tiff\n");
    CHECK(error_of([&] { read_tiff_stack(dir + "/text.tif"); }).find("not a readable TIFF") != std::string::npos);

    write_raw_tiff(dir + "/rgb.tif", "w", 8, 8, 3, 8, SAMPLEFORMAT_UINT, false);
    CHECK(error_of([&] { read_tiff_stack(dir + "/rgb.tif"); }).find("rgb.tif page 0: 3 samples per pixel") != std::string::npos);

    write_raw_tiff(dir + "/onebit.tif", "w", 16, 8, 1, 1, SAMPLEFORMAT_UINT, false);
    CHECK(error_of([&] { read_tiff_stack(dir + "/onebit.tif"); }).find("1-bit unsigned pixels are not supported") !=
          std::string::npos);

    write_raw_tiff(dir + "/mixed.tif", "w", 16, 8, 1, 8, SAMPLEFORMAT_UINT, false, 2, 12);
    const std::string mixed = error_of([&] { read_tiff_stack(dir + "/mixed.tif"); });
    CHECK(mixed.find("mixed.tif page 1: frame is 12x8 uint8 but") != std::string::npos);
    CHECK(error_of([&] { probe_tiff(dir + "/mixed.tif"); }).find("page 1") != std::string::npos);

    // A real file cut short: the header is fine, the pixel data is not there.
    write_tiff_stack(dir + "/whole.tif", {pattern_frame(PixelType::u16, 64, 64, 1)});
    const std::string whole = read_text(dir + "/whole.tif");
    write_text(dir + "/truncated.tif", whole.substr(0, whole.size() / 3));
    CHECK(error_of([&] { read_tiff_stack(dir + "/truncated.tif"); }).find("truncated.tif") != std::string::npos);
}

TEST_CASE("tiff: a folder of single-frame files reads in the given order") {
    const std::string dir = temp_dir("tiff_files");
    std::vector<std::string> paths;
    for (int i = 0; i < 3; ++i) {
        paths.push_back(dir + "/f" + std::to_string(i) + ".tif");
        write_tiff_stack(paths.back(), {pattern_frame(PixelType::u8, 10, 10, i)});
    }
    const Stack s = read_tiff_files(paths);
    REQUIRE(s.size() == 3);
    CHECK(s.frames[2].bytes == pattern_frame(PixelType::u8, 10, 10, 2).bytes);
    write_tiff_stack(dir + "/odd.tif", {pattern_frame(PixelType::u16, 10, 10, 0)});
    paths.push_back(dir + "/odd.tif");
    CHECK(error_of([&] { read_tiff_files(paths); }).find("odd.tif: frame is 10x10 uint16") != std::string::npos);
}

TEST_CASE("tiff: a multi-page file's pages read by many threads at once, in any order, are the pages") {
    // FrameReader decodes on up to four handles of the file at once; with
    // no cache, every read decodes.
    const std::string dir = temp_dir("tiff_threads");
    std::vector<RawFrame> pages;
    for (int i = 0; i < 40; ++i) pages.push_back(pattern_frame(PixelType::u16, 33, 21, i));
    write_tiff_stack(dir + "/s.tif", pages);
    FrameReader reader({dir + "/s.tif"}, 0);
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0}, read{0};
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            for (int k = 0; k < 3 * 40; ++k) {
                const int page = (k * (2 * t + 1) + t) % 40;
                if (reader.read(page)->bytes != pages[page].bytes) ++wrong;
                ++read;
            }
        });
    for (std::thread& t : threads) t.join();
    CHECK(read == 8 * 3 * 40);
    CHECK(wrong == 0);
}

TEST_CASE("frame cache: kept frames are page-locked once each and unlocked when freed; others never") {
    // FrameReader::lock_kept_pages, with a lock that records what it is
    // given (the CUDA job's is cuda::lock_pages).
    const std::string dir = temp_dir("frame_cache_locking");
    std::vector<RawFrame> pages;
    for (int i = 0; i < 6; ++i) pages.push_back(pattern_frame(PixelType::u16, 40, 25, i));  // 2000 bytes each
    write_tiff_stack(dir + "/s.tif", pages);
    std::mutex m;
    std::set<const void*> locked;
    int locks = 0, unlocks = 0, stray_unlocks = 0;
    auto locking = [&](std::size_t least) {
        PageLocking how;
        how.lock = [&](void* data, std::size_t bytes) {
            const std::lock_guard<std::mutex> hold(m);
            CHECK(bytes == 2000);
            ++locks;
            return locked.insert(data).second;
        };
        how.unlock = [&](void* data) {
            const std::lock_guard<std::mutex> hold(m);
            ++unlocks;
            stray_unlocks += locked.erase(data) == 0;
        };
        how.least_bytes = least;
        return how;
    };
    {
        FrameReader reader({dir + "/s.tif"}, 4 * 2000);  // room for four of the six
        reader.lock_kept_pages(locking(2000));
        for (int round = 0; round < 3; ++round)
            for (int k = 0; k < 6; ++k) CHECK(reader.read(k)->bytes == pages[k].bytes);
        CHECK(locks == 4);  // the four kept, once each; the two streamed never
        CHECK(unlocks == 0);
    }
    CHECK(unlocks == 4);
    CHECK(stray_unlocks == 0);
    CHECK(locked.empty());
    // Frames below the size asked for stay pageable.
    FrameReader small({dir + "/s.tif"}, 6 * 2000);
    small.lock_kept_pages(locking(2001));
    for (int k = 0; k < 6; ++k) CHECK(small.read(k)->bytes == pages[k].bytes);
    CHECK(locks == 4);
}

TEST_CASE("tiff: a volume's pages read in runs on several threads are its pages, on 1 thread as on 2, 3 and 8") {
    const std::string dir = temp_dir("tiff_volume_runs");
    std::vector<RawFrame> pages;
    for (int i = 0; i < 23; ++i) pages.push_back(pattern_frame(PixelType::i16, 31, 17, i));
    write_tiff_stack(dir + "/v.tif", pages);
    write_raw_tiff(dir + "/tiled.tif", "w", 40, 35, 1, 8, SAMPLEFORMAT_UINT, true, 5);
    const Stack tiled = read_tiff_stack(dir + "/tiled.tif");
    const int threads = omp_get_max_threads();
    for (const int n : {1, 2, 3, 8}) {
        CAPTURE(n);
        omp_set_num_threads(n);
        const RawFrame v = read_tiff_volume(dir + "/v.tif");
        REQUIRE(v.depth == 23);
        CHECK(v.type == PixelType::i16);
        for (int z = 0; z < 23; ++z) {
            const std::size_t slice = pages[z].bytes.size();
            CHECK(std::memcmp(v.bytes.data() + z * slice, pages[z].bytes.data(), slice) == 0);
        }
        const RawFrame t = read_tiff_volume(dir + "/tiled.tif");
        REQUIRE(t.depth == 5);
        for (int z = 0; z < 5; ++z)
            CHECK(std::memcmp(t.bytes.data() + z * 40 * 35, tiled.frames[z].bytes.data(), 40 * 35) == 0);
    }
    // A page of another size is named, whichever run reads it.
    write_raw_tiff(dir + "/mixed.tif", "w", 16, 8, 1, 8, SAMPLEFORMAT_UINT, false, 4, 12);
    CHECK(error_of([&] { read_tiff_volume(dir + "/mixed.tif"); }).find("mixed.tif page 1: frame is 12x8 uint8") !=
          std::string::npos);
    omp_set_num_threads(threads);
}

TEST_CASE("tiff: a header claiming more than the file can hold is refused before allocating") {
    // 331 bytes claiming 1.2 GB tiles; found by `make fuzz` (tests/fuzz/crashers/tiff/).
    CHECK_THROWS_WITH_AS(read_tiff_stack(source_path("tests/fuzz/crashers/tiff/huge-tile-claimed-by-small-file.tif")),
                         doctest::Contains("but the file has only 331 bytes"), InputError);
}
