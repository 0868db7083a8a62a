// Volumes of brain atlases (src/io/volume_io): NRRD and NIfTI round trips
// of every voxel type with their voxel size, headers read as other tools
// write them, bad files named, and landmark mode reading the voxel size
// from the headers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include <nifti2_io.h>

#include "../pipelines/landmarks.hpp"
#include "../src/core/error.hpp"
#include "../src/io/volume_io.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

const char* fish = "sample_data/fish1_pre_anatomy_41x83x166.tif";

// A crop of the real volume in `type` (values scaled into its range).
RawFrame real_crop(PixelType type) {
    const RawFrame c = crop_volume(sample_volume(fish), 40, 20, 5, 37, 29, 11);
    const ImageF f = c.to_float();
    RawFrame out{type, c.width, c.height, c.depth, std::vector<unsigned char>(f.pixels.size() * bytes_per_pixel(type))};
    for (std::size_t i = 0; i < f.pixels.size(); ++i) {
        const float v = f.pixels[i];
        switch (type) {
            case PixelType::u8: out.bytes[i] = std::uint8_t(std::min(v / 16.0f, 255.0f)); break;
            case PixelType::u16: { const std::uint16_t x = std::uint16_t(v); std::memcpy(&out.bytes[2 * i], &x, 2); break; }
            case PixelType::i16: { const std::int16_t x = std::int16_t(v - 1000); std::memcpy(&out.bytes[2 * i], &x, 2); break; }
            case PixelType::i32: { const std::int32_t x = std::int32_t(v) - 70000; std::memcpy(&out.bytes[4 * i], &x, 4); break; }
            case PixelType::f32: { const float x = v * 0.37f - 3.5f; std::memcpy(&out.bytes[4 * i], &x, 4); break; }
        }
    }
    return out;
}

}  // namespace

TEST_CASE("volumes: NRRD and NIfTI round trips keep every voxel type, the size and the voxel size") {
    const std::string dir = temp_dir("volume_round_trip");
    const std::array<double, 3> spacing = {0.5, 0.75, 2.0};
    for (const char* suffix : {".nrrd", ".nii", ".nii.gz"})
        for (PixelType type : {PixelType::u8, PixelType::u16, PixelType::i16, PixelType::i32, PixelType::f32}) {
            CAPTURE(suffix);
            CAPTURE(to_string(type));
            const RawFrame v = real_crop(type);
            const std::string path = dir + "/v_" + to_string(type) + suffix;
            write_volume(path, v, spacing);
            const VolumeInfo info = probe_volume(path);
            CHECK(info.format == (std::string(suffix) == ".nrrd" ? VolumeFormat::nrrd : VolumeFormat::nifti));
            CHECK(info.width == 37);
            CHECK(info.height == 29);
            CHECK(info.depth == 11);
            CHECK(info.type == type);
            REQUIRE(info.spacing);
            for (int a = 0; a < 3; ++a) CHECK((*info.spacing)[a] == doctest::Approx(spacing[a]));
            const RawFrame back = read_volume(path);
            CHECK(back.width == v.width);
            CHECK(back.depth == v.depth);
            CHECK(back.bytes == v.bytes);
        }
}

TEST_CASE("volumes: a NIfTI-2 file (64-bit header, as newer tools write) reads with its voxel size") {
    const std::string dir = temp_dir("volume_nifti2");
    const RawFrame v = real_crop(PixelType::f32);
    // The header made by nifticlib, the file laid out here (header, 4 bytes
    // of no extensions, data): stackalign itself writes NIfTI-1.
    const int64_t dims[8] = {3, v.width, v.height, v.depth, 1, 1, 1, 1};
    nifti_image* n = nifti_make_new_nim(dims, DT_FLOAT32, 0);
    REQUIRE(n);
    n->dx = n->pixdim[1] = 0.4;
    n->dy = n->pixdim[2] = 0.4;
    n->dz = n->pixdim[3] = 1.6;
    n->nifti_type = NIFTI_FTYPE_NIFTI2_1;
    n->iname_offset = 544;
    nifti_2_header h;
    REQUIRE(nifti_convert_nim2n2hdr(n, &h) == 0);
    nifti_image_free(n);
    std::memcpy(h.magic, "n+2\0\r\n\032\n", 8);
    const std::string path = dir + "/v2.nii";
    {
        std::ofstream f(path, std::ios::binary);
        f.write(reinterpret_cast<const char*>(&h), sizeof h);
        f.write("\0\0\0\0", 4);
        f.write(reinterpret_cast<const char*>(v.bytes.data()), std::streamsize(v.bytes.size()));
    }
    std::int32_t header_size = 0;
    std::memcpy(&header_size, read_text(path).data(), 4);
    CHECK(header_size == 540);  // NIfTI-2's header (NIfTI-1's is 348)
    const VolumeInfo info = probe_volume(path);
    CHECK(info.format == VolumeFormat::nifti);
    CHECK(info.type == PixelType::f32);
    REQUIRE(info.spacing);
    CHECK((*info.spacing)[0] == doctest::Approx(0.4));
    CHECK((*info.spacing)[2] == doctest::Approx(1.6));
    CHECK(read_volume(path).bytes == v.bytes);
}

TEST_CASE("volumes: a detached NRRD header with space directions (as 3D Slicer writes) gives the voxel size") {
    const std::string dir = temp_dir("volume_nhdr");
    const RawFrame v = real_crop(PixelType::u16);
    std::ofstream(dir + "/v.raw", std::ios::binary).write(reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size());
    write_text(dir + "/v.nhdr",
               "NRRD0004\ntype: unsigned short\ndimension: 3\nspace: left-posterior-superior\nsizes: 37 29 11\n"
               "space directions: (0.5,0,0) (0,0.75,0) (0,0,2)\nspace origin: (10,20,30)\nendian: little\n"
               "encoding: raw\ndata file: v.raw\n");
    const VolumeInfo info = probe_volume(dir + "/v.nhdr");
    REQUIRE(info.spacing);
    CHECK((*info.spacing)[0] == doctest::Approx(0.5));
    CHECK((*info.spacing)[1] == doctest::Approx(0.75));
    CHECK((*info.spacing)[2] == doctest::Approx(2.0));
    CHECK(read_volume(dir + "/v.nhdr").bytes == v.bytes);
    // A header without any spacing records none (the points are then in voxels).
    write_text(dir + "/plain.nhdr", "NRRD0004\ntype: unsigned short\ndimension: 3\nsizes: 37 29 11\nendian: little\n"
                                    "encoding: raw\ndata file: v.raw\n");
    CHECK_FALSE(probe_volume(dir + "/plain.nhdr").spacing);
}

TEST_CASE("volumes: bad NRRD and NIfTI files are named with what is wrong") {
    const std::string dir = temp_dir("volume_bad");
    write_text(dir + "/text.nrrd", "this is not a volume\n");
    CHECK_THROWS_WITH_AS(probe_volume(dir + "/text.nrrd"), doctest::Contains((dir + "/text.nrrd: ").c_str()), InputError);
    try {
        probe_volume(dir + "/text.nrrd");
    } catch (const InputError& e) {
        MESSAGE("a text file named .nrrd: " << std::string(e.what()));
        CHECK(std::string(e.what()).find("[nrrd]") == std::string::npos);
    }
    write_text(dir + "/text.nii", "this is not a volume either\n");
    CHECK_THROWS_WITH_AS(probe_volume(dir + "/text.nii"), doctest::Contains("not a NIfTI-1 or NIfTI-2 header"), InputError);
    CHECK_THROWS_WITH_AS(probe_volume(dir + "/missing.nii.gz"), doctest::Contains("missing.nii.gz: no such file"),
                         InputError);
    // A NIfTI file cut short: the header reads, the data does not.
    write_volume(dir + "/whole.nii", real_crop(PixelType::u16), {1, 1, 1});
    std::string bytes = read_text(dir + "/whole.nii");
    write_text(dir + "/cut.nii", bytes.substr(0, bytes.size() / 2));
    CHECK(probe_volume(dir + "/cut.nii").width == 37);
    CHECK_THROWS_WITH_AS(read_volume(dir + "/cut.nii"), doctest::Contains("cut.nii: "), InputError);
    // A 4D volume (a time series).
    write_text(dir + "/x.raw", std::string(64, '\0'));
    write_text(dir + "/h.nhdr", "NRRD0004\ntype: float\ndimension: 4\nsizes: 2 2 2 2\nendian: little\nencoding: raw\ndata file: x.raw\n");
    CHECK_THROWS_WITH_AS(probe_volume(dir + "/h.nhdr"), doctest::Contains("expected a 3D volume"), InputError);
}

TEST_CASE("landmarks: NRRD source, NIfTI target, points in the headers' units") {
    const std::string dir = temp_dir("landmarks_formats");
    const RawFrame& v = sample_volume(fish);
    // Content moved by whole voxels (+3, -2, +1), voxel size [2, 2, 4] in both headers.
    RawFrame moved = v;
    std::fill(moved.bytes.begin(), moved.bytes.end(), 0);
    for (int z = 0; z < v.depth; ++z)
        for (int y = 0; y < v.height; ++y)
            for (int x = 0; x < v.width; ++x) {
                const int sx = x - 3, sy = y + 2, sz = z - 1;
                if (sx < 0 || sy < 0 || sz < 0 || sx >= v.width || sy >= v.height || sz >= v.depth) continue;
                std::memcpy(&moved.bytes[((std::size_t(z) * v.height + y) * v.width + x) * 2],
                            &v.bytes[((std::size_t(sz) * v.height + sy) * v.width + sx) * 2], 2);
            }
    const std::array<double, 3> spacing = {2, 2, 4};
    write_volume(dir + "/source.nrrd", v, spacing);
    write_volume(dir + "/target.nii.gz", moved, spacing);
    write_text(dir + "/points.csv", "name,x,y,z\na,120,80,80\nb,200,60,60\nc,160,100,100\nd,100,120,40\n");
    auto config = [&](const std::string& target) {
        return "mode = \"landmarks\"\n[landmarks]\nsource = \"source.nrrd\"\ntarget = \"" + target +
               "\"\npoints = \"points.csv\"\nsubpixel = false\n[preprocess]\nthreshold = 10.0\n[output]\ndir = \"out\"\n"
               "[device]\nbackend = \"cpu\"\n";
    };
    write_text(dir + "/job.toml", config("target.nii.gz"));
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    const LandmarkResult r = run_landmarks(load_config(dir + "/job.toml"), quiet);
    REQUIRE(r.matches.size() == 4);
    for (const LandmarkMatch& m : r.matches) {
        CAPTURE(m.name);
        REQUIRE(m.matched());
        CHECK(m.dst[0] - m.src[0] == 6);   // 3 voxels of 2
        CHECK(m.dst[1] - m.src[1] == -4);
        CHECK(m.dst[2] - m.src[2] == 4);   // 1 voxel of 4
    }
    // Headers that disagree: an error naming both.
    write_volume(dir + "/other.nii", moved, {2, 2, 3});
    write_text(dir + "/job.toml", config("other.nii"));
    CHECK_THROWS_WITH_AS(run_landmarks(load_config(dir + "/job.toml"), quiet),
                         doctest::Contains("voxel size [2, 2, 3] differs from the source's [2, 2, 4]"), InputError);
}
