#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <atomic>
#include <filesystem>
#include <thread>

#include "../src/core/error.hpp"
#include "../src/io/mrc_io.hpp"
#include "../src/io/stack_io.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

const char* kTilt = "sample_data/haadf_tilt_91x64x64.tif";

// Views of the real HAADF series (uint16) mapped into the range of `type`.
std::vector<RawFrame> real_frames(PixelType type, double lo, double hi, int count = 3) {
    std::vector<RawFrame> out;
    for (int k = 0; k < count; ++k) {
        const RawFrame& src = sample_frame(kTilt, 40 + k);
        const auto* in = reinterpret_cast<const std::uint16_t*>(src.bytes.data());
        RawFrame f;
        f.type = type;
        f.width = src.width;
        f.height = src.height;
        f.bytes.resize(src.pixel_count() * bytes_per_pixel(type));
        visit_pixels(f, [&](auto* p) {
            using T = std::remove_pointer_t<decltype(p)>;
            for (std::size_t i = 0; i < src.pixel_count(); ++i) {
                const double v = lo + (hi - lo) * (in[i] - 513.0) / (39459.0 - 513.0);
                p[i] = std::is_floating_point_v<T> ? T(v) : T(std::lround(v));
            }
        });
        out.push_back(f);
    }
    return out;
}

std::vector<double> values(const RawFrame& f) {
    std::vector<double> v(f.pixel_count());
    visit_pixels(f, [&](const auto* p) {
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = double(p[i]);
    });
    return v;
}

std::vector<unsigned char> read_bytes(const std::string& path) {
    const std::string s = read_text(path);
    return {s.begin(), s.end()};
}
void write_bytes(const std::string& path, const std::vector<unsigned char>& b) {
    write_text(path, std::string(b.begin(), b.end()));
}

}  // namespace

TEST_CASE("mrc: every mode round-trips real frames, with the pixel size") {
    const std::string dir = temp_dir("mrc_modes");
    struct Case {
        int mode;
        bool signed_bytes;
        PixelType in, out;
        double lo, hi;
    };
    const Case cases[] = {
        {0, false, PixelType::u8, PixelType::u8, 0, 255},
        {0, true, PixelType::i16, PixelType::i16, -128, 127},
        {1, false, PixelType::i16, PixelType::i16, -30000, 30000},
        {2, false, PixelType::f32, PixelType::f32, -1.5, 2.25},
        {6, false, PixelType::u16, PixelType::u16, 0, 65535},
        // Values with at most 11 significant bits, so float16 holds them exactly.
        {12, false, PixelType::f32, PixelType::f32, -1024, 1024},
    };
    for (const Case& c : cases) {
        CAPTURE(c.mode);
        CAPTURE(c.signed_bytes);
        std::vector<RawFrame> frames = real_frames(c.in, c.lo, c.hi);
        if (c.mode == 12)
            for (RawFrame& f : frames)
                visit_pixels(f, [&](auto* p) {
                    for (std::size_t i = 0; i < f.pixel_count(); ++i) p[i] = std::round(p[i]);
                });
        const std::string path = dir + "/m" + std::to_string(c.mode) + (c.signed_bytes ? "s" : "") + ".mrc";
        write_mrc_stack(path, frames, c.mode, 179.9, c.signed_bytes);
        MrcInfo info;
        const Stack back = read_mrc_stack(path, &info);
        CHECK(info.mode == c.mode);
        CHECK(info.nx == 64);
        CHECK(info.nz == 3);
        CHECK(info.pixel_size[0] == doctest::Approx(179.9).epsilon(1e-6));
        CHECK(info.pixel_size[2] == doctest::Approx(179.9).epsilon(1e-6));
        REQUIRE(back.size() == 3);
        for (int k = 0; k < 3; ++k) {
            CHECK(back.frames[k].type == c.out);
            CHECK(values(back.frames[k]) == values(frames[k]));
        }
        // The header's DMIN, DMAX, DMEAN and RMS (the standard deviation) of the stored values.
        std::vector<double> all;
        for (const RawFrame& f : frames)
            for (double v : values(f)) all.push_back(v);
        double sum = 0, squares = 0;
        for (double v : all) sum += v;
        const double mean = sum / double(all.size());
        for (double v : all) squares += (v - mean) * (v - mean);
        const std::vector<unsigned char> bytes = read_bytes(path);
        auto word = [&](int i) {
            float f;
            std::memcpy(&f, bytes.data() + 4 * i, 4);
            return double(f);
        };
        CHECK(word(19) == *std::min_element(all.begin(), all.end()));
        CHECK(word(20) == *std::max_element(all.begin(), all.end()));
        CHECK(word(21) == doctest::Approx(mean).epsilon(1e-6));
        CHECK(word(54) == doctest::Approx(std::sqrt(squares / double(all.size()))).epsilon(1e-5));
    }
}

TEST_CASE("stack io: frames read by several threads at once are the frames of the file (MRC and TIFF)") {
    const std::string dir = temp_dir("reader_threads");
    // The real HAADF views, as uint16 MRC and as the TIFF itself.
    const Stack tilt = read_tiff_stack(source_path(kTilt));
    write_mrc_stack(dir + "/tilt.mrc", tilt.frames, 6, 1.0, false);
    for (const std::string& path : {dir + "/tilt.mrc", source_path(kTilt)}) {
        CAPTURE(path);
        // No cache: every read decodes, so the threads' reads overlap.
        FrameReader reader({path}, 0);
        REQUIRE(reader.size() == int(tilt.size()));
        std::vector<std::vector<unsigned char>> got(tilt.size());
        std::vector<std::thread> threads;
        std::atomic<bool> failed{false};
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                try {
                    for (int round = 0; round < 3; ++round)
                        for (int k = t; k < reader.size(); k += 4) {
                            auto bytes = reader.read(k)->bytes;
                            if (round > 0 && bytes != got[k]) failed = true;
                            got[k] = std::move(bytes);
                        }
                } catch (...) {
                    failed = true;
                }
            });
        for (auto& th : threads) th.join();
        CHECK_FALSE(failed);
        for (std::size_t k = 0; k < got.size(); ++k) CHECK(got[k] == tilt.frames[k].bytes);
    }
}

TEST_CASE("mrc: float16 conversion is exact for every half value") {
    int wrong = 0;
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const float f = half_to_float(std::uint16_t(h));
        if (std::isnan(f)) continue;
        wrong += float_to_half(f) != h;
    }
    CHECK(wrong == 0);
    CHECK(half_to_float(float_to_half(1.0f)) == 1.0f);
    CHECK(half_to_float(float_to_half(65504.0f)) == 65504.0f);
    CHECK(std::isinf(half_to_float(float_to_half(1e6f))));
    CHECK(half_to_float(float_to_half(2049.0f)) == 2048.0f);  // ties to even
    CHECK(half_to_float(float_to_half(5.96e-8f)) == doctest::Approx(5.96e-8f).epsilon(0.01));  // smallest subnormal
}

TEST_CASE("mrc: big-endian files, files without a machine stamp, and extended headers read the same") {
    const std::string dir = temp_dir("mrc_endian");
    const std::vector<RawFrame> frames = real_frames(PixelType::i16, -30000, 30000, 2);
    write_mrc_stack(dir + "/le.mrc", frames, 1, 10.0);
    const std::vector<unsigned char> le = read_bytes(dir + "/le.mrc");

    // Big-endian: every header word except MAP and the labels, and every pixel, swapped.
    std::vector<unsigned char> be = le;
    for (int w = 0; w < 56; ++w)
        if (w != 52 && w != 53) std::reverse(be.begin() + 4 * w, be.begin() + 4 * w + 4);
    be[212] = 0x11;
    be[213] = 0x11;
    be[214] = be[215] = 0;
    for (std::size_t i = 1024; i < be.size(); i += 2) std::swap(be[i], be[i + 1]);
    write_bytes(dir + "/be.mrc", be);

    std::vector<unsigned char> unstamped = be;  // byte order from MODE alone
    unstamped[212] = unstamped[213] = 0;
    write_bytes(dir + "/unstamped.mrc", unstamped);

    // NSYMBT = 512 bytes of extended header (junk) before the data.
    std::vector<unsigned char> ext(le.begin(), le.begin() + 1024);
    const std::int32_t nsymbt = 512;
    std::memcpy(ext.data() + 92, &nsymbt, 4);
    for (int i = 0; i < 512; ++i) ext.push_back(static_cast<unsigned char>(i * 7));
    ext.insert(ext.end(), le.begin() + 1024, le.end());
    write_bytes(dir + "/ext.mrc", ext);

    for (const char* name : {"be.mrc", "unstamped.mrc", "ext.mrc"}) {
        CAPTURE(name);
        MrcInfo info;
        const Stack s = read_mrc_stack(dir + "/" + name, &info);
        CHECK(info.big_endian == (std::string(name) != "ext.mrc"));
        REQUIRE(s.size() == 2);
        for (int k = 0; k < 2; ++k) CHECK(values(s.frames[k]) == values(frames[k]));
    }
}

TEST_CASE("mrc: corrupt and truncated headers are input errors naming the field") {
    const std::string dir = temp_dir("mrc_bad");
    write_mrc_stack(dir + "/good.mrc", real_frames(PixelType::u16, 0, 65535, 2), 6, 1.0);
    const std::vector<unsigned char> good = read_bytes(dir + "/good.mrc");
    auto with_word = [&](int word, std::int32_t v) {
        std::vector<unsigned char> b = good;
        std::memcpy(b.data() + 4 * word, &v, 4);
        write_bytes(dir + "/bad.mrc", b);
        return dir + "/bad.mrc";
    };
    CHECK_THROWS_WITH_AS(probe_mrc(with_word(3, 4)), doctest::Contains("MODE: 4 is not supported"), InputError);
    CHECK_THROWS_WITH_AS(probe_mrc(with_word(0, -5)), doctest::Contains("field NX: columns = -5"), InputError);
    CHECK_THROWS_WITH_AS(probe_mrc(with_word(2, 0)), doctest::Contains("field NZ"), InputError);
    CHECK_THROWS_WITH_AS(probe_mrc(with_word(23, -1)), doctest::Contains("field NSYMBT"), InputError);
    CHECK_THROWS_WITH_AS(probe_mrc(with_word(16, 3)), doctest::Contains("MAPC/MAPR/MAPS"), InputError);
    // A header claiming 2^20 x 2^20 x 2^20 pixels: an error before any allocation.
    std::vector<unsigned char> huge = good;
    for (int w = 0; w < 3; ++w) {
        const std::int32_t v = 1 << 20;
        std::memcpy(huge.data() + 4 * w, &v, 4);
    }
    write_bytes(dir + "/huge.mrc", huge);
    CHECK_THROWS_WITH_AS(read_mrc_stack(dir + "/huge.mrc"), doctest::Contains("truncated"), InputError);
    write_bytes(dir + "/short.mrc", std::vector<unsigned char>(good.begin(), good.end() - 100));
    CHECK_THROWS_WITH_AS(read_mrc_stack(dir + "/short.mrc"),
                         doctest::Contains("needs 17408 bytes, the file has 17308"), InputError);
    write_bytes(dir + "/tiny.mrc", std::vector<unsigned char>(good.begin(), good.begin() + 500));
    CHECK_THROWS_WITH_AS(probe_mrc(dir + "/tiny.mrc"), doctest::Contains("shorter than the 1024-byte MRC header"),
                         InputError);
    CHECK_THROWS_AS(probe_mrc(dir + "/missing.mrc"), InputError);
}
