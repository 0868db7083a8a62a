// MRC/CCP4 image stacks (.mrc .st .ali .rec .map), the format of IMOD,
// AreTomo and most cryo-EM/tomography tools (MRC2014: 1024-byte header,
// optional extended header of NSYMBT bytes, then NX*NY*NZ pixels, x fastest).
// Sections (z) are frames; rows are read in file order, so row 0 of a frame
// is IMOD's y = 0 and shifts need no flip to be IMOD's.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "../core/image.hpp"

namespace stackalign {

// File suffixes taken as MRC rather than TIFF.
bool is_mrc_path(const std::string& path);

struct MrcInfo {
    int nx = 0, ny = 0, nz = 0;
    int mode = 0;                 // 0 int8 / uint8, 1 int16, 2 float32, 6 uint16, 12 float16
    bool signed_bytes = true;     // mode 0: MRC2014 says signed; IMOD files may flag unsigned
    bool big_endian = false;
    double pixel_size[3] = {0, 0, 0};  // Angstrom per pixel from the cell (X/MX ...); 0 when unset
    std::size_t data_offset = 1024;    // 1024 + NSYMBT
    PixelType type = PixelType::u8;    // how the pixels are held in memory
};

// Header only; InputError naming the field for anything unreadable, and for
// a file shorter than the header says its data is (before any allocation).
MrcInfo probe_mrc(const std::string& path);
MrcInfo parse_mrc_header(const unsigned char* header, std::size_t file_size, const std::string& path);

// Sections read one at a time (a stack larger than memory). read() may be
// called from several threads at once (each read is one pread).
class MrcSections {
public:
    explicit MrcSections(const std::string& path);
    ~MrcSections();
    const MrcInfo& info() const { return info_; }
    RawFrame read(int z) const;

private:
    void read_at(unsigned char* to, std::size_t bytes, std::size_t at, int z) const;
    struct Impl;
    std::string path_;
    MrcInfo info_;
    std::unique_ptr<Impl> impl_;
};

// Every section as a frame. Modes 0 (signed), 1 -> i16; 0 (unsigned) -> u8;
// 2, 12 -> f32; 6 -> u16.
Stack read_mrc_stack(const std::string& path, MrcInfo* info = nullptr);

// The mode that holds a pixel type without loss (u8 -> 0 flagged unsigned
// for IMOD, i16 -> 1, u16 -> 6, f32 -> 2; i32 has none: OutputError).
int mrc_mode_for(PixelType t);

// A frame converted to a stack's mode, with the statistics of the values
// stored that the header needs, per lane (pixel index modulo kLanes): one
// running sum was a chain of dependent additions, most of the time per
// section. The writer adds the lanes in order.
struct MrcSection {
    static constexpr int kLanes = 4;
    std::vector<unsigned char> bytes;
    double vmin[kLanes], vmax[kLanes], sum[kLanes], sum2[kLanes];
};

// Sections written one at a time; close() puts the header (with the
// statistics of everything written) in front.
class MrcStackWriter {
public:
    MrcStackWriter(const std::string& path, int mode, double pixel_size, bool signed_bytes, int nx, int ny, int nz);
    ~MrcStackWriter();
    // The conversion is most of a section's cost: encode() may run on
    // several threads at once, for the sections append() then writes in order.
    MrcSection encode(const RawFrame& frame) const;
    void append(const MrcSection& section);
    void append(const RawFrame& frame) { append(encode(frame)); }
    void close();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Writes frames as one little-endian MRC2014 stack in `mode` (values are
// converted, rounded and clamped to the mode's range), with the cell set
// from `pixel_size` (Angstrom, 0 = unknown -> 1) and DMIN/DMAX/DMEAN/RMS.
// Writes `path` directly; callers that need atomicity write to a temporary.
void write_mrc_stack(const std::string& path, const std::vector<RawFrame>& frames, int mode, double pixel_size,
                     bool signed_bytes = false);

// IEEE half <-> float, for mode 12.
float half_to_float(std::uint16_t h);
std::uint16_t float_to_half(float f);

}  // namespace stackalign
