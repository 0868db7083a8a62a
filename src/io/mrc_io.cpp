#include "mrc_io.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include "../core/error.hpp"

namespace stackalign {

namespace {

constexpr std::int32_t kImodStamp = 1146047817;  // "IMOD" as IMOD writes it at byte 152

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::uint32_t swap32(std::uint32_t v) {
    return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

// Little- or big-endian 32-bit word `index` of the header.
struct HeaderWords {
    const unsigned char* h;
    bool big;
    std::uint32_t u(int index) const {
        std::uint32_t v;
        std::memcpy(&v, h + 4 * index, 4);
        return big ? swap32(v) : v;
    }
    std::int32_t i(int index) const { return std::int32_t(u(index)); }
    float f(int index) const {
        const std::uint32_t v = u(index);
        float out;
        std::memcpy(&out, &v, 4);
        return out;
    }
};

bool known_mode(std::int32_t m) { return m == 0 || m == 1 || m == 2 || m == 6 || m == 12; }

std::size_t mode_bytes(int mode) {
    switch (mode) {
        case 0: return 1;
        case 1: case 6: case 12: return 2;
        default: return 4;
    }
}

// Each value of `width` bytes reversed in place (a big-endian file).
void swap_bytes(std::vector<unsigned char>& data, std::size_t width) {
    for (std::size_t i = 0; i + width <= data.size(); i += width) std::reverse(data.begin() + i, data.begin() + i + width);
}

[[noreturn]] void bad(const std::string& path, const std::string& field, const std::string& what) {
    throw InputError(path + ": MRC header field " + field + ": " + what);
}

}  // namespace

bool is_mrc_path(const std::string& path) {
    const std::string ext = lower(std::filesystem::path(path).extension().string());
    return ext == ".mrc" || ext == ".mrcs" || ext == ".st" || ext == ".ali" || ext == ".rec" || ext == ".map" ||
           ext == ".preali";
}

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    const int exp = (h >> 10) & 0x1f;
    std::uint32_t mant = h & 0x3ffu;
    std::uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN
    } else if (exp != 0) {
        bits = sign | (std::uint32_t(exp - 15 + 127) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;  // +-0
    } else {
        // Subnormal half: normalise into a float.
        int e = -1;
        do {
            ++e;
            mant <<= 1;
        } while (!(mant & 0x400u));
        bits = sign | (std::uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

std::uint16_t float_to_half(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    const std::uint16_t sign = std::uint16_t((bits >> 16) & 0x8000u);
    const int exp = int((bits >> 23) & 0xff);
    std::uint32_t mant = bits & 0x7fffffu;
    if (exp == 0xff) return std::uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf / NaN
    const int e = exp - 127 + 15;
    if (e >= 0x1f) return std::uint16_t(sign | 0x7c00u);  // overflow -> inf
    if (e <= 0) {
        if (e < -10) return sign;  // underflow -> 0
        mant |= 0x800000u;          // subnormal half: shift in the implicit 1, round to nearest even
        const int shift = 14 - e;
        std::uint32_t half = mant >> shift;
        const std::uint32_t rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1))) ++half;
        return std::uint16_t(sign | half);
    }
    std::uint32_t half = (std::uint32_t(e) << 10) | (mant >> 13);
    const std::uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;  // may carry into the exponent: still right
    return std::uint16_t(sign | half);
}

MrcInfo parse_mrc_header(const unsigned char* header, std::size_t file_size, const std::string& path) {
    if (file_size < 1024)
        throw InputError(path + ": is " + std::to_string(file_size) +
                         " bytes, shorter than the 1024-byte MRC header (truncated or not an MRC file)");
    MrcInfo info;
    // MACHST: 0x44 0x4? little-endian, 0x11 0x11 big-endian. Old files leave
    // it zero: then the byte order under which MODE makes sense wins.
    const unsigned char stamp = header[212];
    if (stamp == 0x11) {
        info.big_endian = true;
    } else if (stamp != 0x44) {
        const bool little_ok = known_mode(HeaderWords{header, false}.i(3));
        info.big_endian = !little_ok && known_mode(HeaderWords{header, true}.i(3));
    }
    const HeaderWords w{header, info.big_endian};
    const std::int32_t nx = w.i(0), ny = w.i(1), nz = w.i(2), mode = w.i(3);
    if (nx < 1 || nx > (1 << 20)) bad(path, "NX", "columns = " + std::to_string(nx) + ", expected 1 to 1048576");
    if (ny < 1 || ny > (1 << 20)) bad(path, "NY", "rows = " + std::to_string(ny) + ", expected 1 to 1048576");
    if (nz < 1 || nz > (1 << 20)) bad(path, "NZ", "sections = " + std::to_string(nz) + ", expected 1 to 1048576");
    if (!known_mode(mode))
        bad(path, "MODE", std::to_string(mode) +
                              " is not supported; stackalign reads modes 0 (8-bit), 1 (int16), 2 (float32), "
                              "6 (uint16) and 12 (float16)");
    const std::int32_t mapc = w.i(16), mapr = w.i(17), maps = w.i(18);
    if (!(mapc == 1 && mapr == 2 && maps == 3) && !(mapc == 0 && mapr == 0 && maps == 0))
        bad(path, "MAPC/MAPR/MAPS", "axis order " + std::to_string(mapc) + "," + std::to_string(mapr) + "," +
                                        std::to_string(maps) + " is not supported; image stacks have 1,2,3");
    const std::int32_t nsymbt = w.i(23);
    if (nsymbt < 0) bad(path, "NSYMBT", "extended header size " + std::to_string(nsymbt) + " is negative");
    info.nx = nx;
    info.ny = ny;
    info.nz = nz;
    info.mode = mode;
    info.data_offset = 1024 + std::size_t(nsymbt);
    const unsigned long long data = (unsigned long long)nx * ny * nz * mode_bytes(mode);
    if (file_size < info.data_offset || file_size - info.data_offset < data) {
        const unsigned long long section = (unsigned long long)nx * ny * mode_bytes(mode);
        const unsigned long long whole = file_size < info.data_offset ? 0 : (file_size - info.data_offset) / section;
        throw InputError(path + ": damaged or truncated file: the header (NX " + std::to_string(nx) + ", NY " +
                         std::to_string(ny) + ", NZ " + std::to_string(nz) + ", MODE " + std::to_string(mode) +
                         ", NSYMBT " + std::to_string(nsymbt) + ") needs " + std::to_string(info.data_offset + data) +
                         " bytes, the file has " + std::to_string(file_size) + ": " +
                         (whole ? "sections 0.." + std::to_string(whole - 1) + " are complete, " : std::string()) +
                         "section " + std::to_string(whole) + " onwards is missing");
    }
    // Mode 0: IMOD marks its files (stamp at byte 152) and sets flag bit 0 for
    // signed bytes; unmarked files follow MRC2014 (signed) when they say they
    // are MRC2014 (NVERSION >= 20140), and the older unsigned habit otherwise.
    const bool imod = w.i(38) == kImodStamp;
    info.signed_bytes = imod ? (w.i(39) & 1) != 0 : w.i(27) >= 20140;
    switch (mode) {
        case 0: info.type = info.signed_bytes ? PixelType::i16 : PixelType::u8; break;
        case 1: info.type = PixelType::i16; break;
        case 6: info.type = PixelType::u16; break;
        default: info.type = PixelType::f32; break;
    }
    const std::int32_t m[3] = {w.i(7), w.i(8), w.i(9)};
    for (int k = 0; k < 3; ++k) {
        const float cell = w.f(10 + k);
        info.pixel_size[k] = m[k] > 0 && std::isfinite(cell) && cell > 0 ? double(cell) / m[k] : 0.0;
    }
    return info;
}

MrcInfo probe_mrc(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw InputError(path + ": cannot open: " + ec.message());
    File f(std::fopen(path.c_str(), "rb"));
    if (!f) throw InputError(path + ": cannot open: " + std::strerror(errno));
    unsigned char header[1024] = {};
    const std::size_t got = std::fread(header, 1, sizeof header, f.get());
    return parse_mrc_header(header, got < sizeof header ? got : std::size_t(size), path);
}

struct MrcSections::Impl {
    int fd = -1;
    ~Impl() {
        if (fd >= 0) ::close(fd);
    }
};

MrcSections::MrcSections(const std::string& path) : path_(path), info_(probe_mrc(path)), impl_(std::make_unique<Impl>()) {
    impl_->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (impl_->fd < 0) throw InputError(path + ": cannot read: " + std::strerror(errno));
}
MrcSections::~MrcSections() = default;

void MrcSections::read_at(unsigned char* to, std::size_t bytes, std::size_t at, int z) const {
    while (bytes > 0) {
        const ssize_t got = ::pread(impl_->fd, to, bytes, off_t(at));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            throw InputError(path_ + ": section " + std::to_string(z) + ": cannot read: " + std::strerror(errno));
        if (got == 0) throw InputError(path_ + ": section " + std::to_string(z) + ": unexpected end of file");
        to += got, bytes -= std::size_t(got), at += std::size_t(got);
    }
}

RawFrame MrcSections::read(int z) const {
    const MrcInfo& info = info_;
    const std::size_t pixels = std::size_t(info.nx) * info.ny, in_bytes = pixels * mode_bytes(info.mode);
    const std::size_t at = info.data_offset + std::size_t(z) * in_bytes;
    RawFrame fr;
    fr.type = info.type;
    fr.width = info.nx;
    fr.height = info.ny;
    // The common modes are read straight into the frame; the others into
    // `raw`, then converted.
    const bool converted = (info.mode == 0 && info.signed_bytes) || info.mode == 12;
    std::vector<unsigned char> raw;
    std::vector<unsigned char>& in = converted ? raw : fr.bytes;
    in.resize(in_bytes);
    read_at(in.data(), in_bytes, at, z);
    if (info.big_endian && mode_bytes(info.mode) > 1) swap_bytes(in, mode_bytes(info.mode));
    if (!converted) return fr;
    fr.bytes.resize(pixels * bytes_per_pixel(info.type));
    if (info.mode == 0 && info.signed_bytes) {
        auto* out = reinterpret_cast<std::int16_t*>(fr.bytes.data());
        for (std::size_t i = 0; i < pixels; ++i) out[i] = std::int8_t(raw[i]);
    } else {
        auto* out = reinterpret_cast<float*>(fr.bytes.data());
        for (std::size_t i = 0; i < pixels; ++i) {
            std::uint16_t h;
            std::memcpy(&h, raw.data() + 2 * i, 2);
            out[i] = half_to_float(h);
        }
    }
    return fr;
}

Stack read_mrc_stack(const std::string& path, MrcInfo* info_out) {
    MrcSections sections(path);
    Stack stack;
    for (int z = 0; z < sections.info().nz; ++z) {
        stack.frames.push_back(sections.read(z));
        stack.sources.push_back(path + " section " + std::to_string(z));
    }
    if (info_out) *info_out = sections.info();
    return stack;
}

int mrc_mode_for(PixelType t) {
    switch (t) {
        case PixelType::u8: return 0;
        case PixelType::i16: return 1;
        case PixelType::u16: return 6;
        case PixelType::f32: return 2;
        default: throw OutputError("32-bit integer frames have no MRC mode; write them as TIFF ([output] format = \"tiff\")");
    }
}

struct MrcStackWriter::Impl {
    std::FILE* f = nullptr;
    std::string path;
    int mode, nx, ny, nz, written = 0;
    double pixel_size, lo = 0, hi = 0;
    bool signed_bytes;
    double vmin = INFINITY, vmax = -INFINITY, sum = 0, sum2 = 0;
    ~Impl() {
        if (f) std::fclose(f);
    }
    [[noreturn]] void failed(const std::string& what) const {
        throw OutputError(path + ": " + what + ": " + std::strerror(errno));
    }
    // The value a pixel is stored as, back in double (for the header's
    // statistics), and its bytes at index i of `out`.
    double store(double v, std::size_t i, unsigned char* out) const {
        if (mode == 2) {
            const float f32 = float(v);
            std::memcpy(out + 4 * i, &f32, 4);
            return double(f32);
        }
        if (mode == 12) {
            const std::uint16_t h = float_to_half(float(v));
            std::memcpy(out + 2 * i, &h, 2);
            return double(half_to_float(h));
        }
        v = std::clamp(std::nearbyint(v), lo, hi);
        if (mode == 0) {
            out[i] = signed_bytes ? std::uint8_t(std::int8_t(v)) : std::uint8_t(v);
        } else {
            const std::uint16_t s = mode == 1 ? std::uint16_t(std::int16_t(v)) : std::uint16_t(v);
            std::memcpy(out + 2 * i, &s, 2);
        }
        return v;
    }
};

MrcStackWriter::MrcStackWriter(const std::string& path, int mode, double pixel_size, bool signed_bytes, int nx, int ny,
                               int nz)
    : impl_(std::make_unique<Impl>()) {
    if (!known_mode(mode)) throw InternalError("MrcStackWriter: mode " + std::to_string(mode));
    Impl& m = *impl_;
    m.path = path;
    m.mode = mode;
    m.nx = nx;
    m.ny = ny;
    m.nz = nz;
    m.pixel_size = pixel_size;
    m.signed_bytes = signed_bytes;
    switch (mode) {
        case 0: m.lo = signed_bytes ? -128 : 0, m.hi = signed_bytes ? 127 : 255; break;
        case 1: m.lo = -32768, m.hi = 32767; break;
        case 6: m.lo = 0, m.hi = 65535; break;
        default: break;
    }
    m.f = std::fopen(path.c_str(), "wb");
    if (!m.f) m.failed("cannot create");
    // The header goes last, when the statistics it carries are known.
    const unsigned char zeros[1024] = {};
    if (std::fwrite(zeros, 1, sizeof zeros, m.f) != sizeof zeros) m.failed("write failed");
}
MrcStackWriter::~MrcStackWriter() = default;

MrcSection MrcStackWriter::encode(const RawFrame& frame) const {
    const Impl& m = *impl_;
    if (frame.width != m.nx || frame.height != m.ny || frame.depth != 1)
        throw InternalError("MrcStackWriter: frame does not fit the stack");
    const std::size_t pixels = std::size_t(m.nx) * m.ny;
    MrcSection out;
    out.bytes.resize(pixels * mode_bytes(m.mode));
    constexpr int kLanes = MrcSection::kLanes;
    std::fill(out.vmin, out.vmin + kLanes, INFINITY);
    std::fill(out.vmax, out.vmax + kLanes, -INFINITY);
    std::fill(out.sum, out.sum + kLanes, 0.0);
    std::fill(out.sum2, out.sum2 + kLanes, 0.0);
    visit_pixels(frame, [&](const auto* px) {
        for (std::size_t i = 0; i < pixels; ++i) {
            const double v = m.store(double(px[i]), i, out.bytes.data());
            const int k = int(i % kLanes);
            out.vmin[k] = std::min(out.vmin[k], v);
            out.vmax[k] = std::max(out.vmax[k], v);
            out.sum[k] += v;
            out.sum2[k] += v * v;
        }
    });
    return out;
}

void MrcStackWriter::append(const MrcSection& section) {
    Impl& m = *impl_;
    if (section.bytes.size() != std::size_t(m.nx) * m.ny * mode_bytes(m.mode) || m.written >= m.nz)
        throw InternalError("MrcStackWriter: section does not fit the stack");
    for (int k = 0; k < MrcSection::kLanes; ++k) {
        m.vmin = std::min(m.vmin, section.vmin[k]);
        m.vmax = std::max(m.vmax, section.vmax[k]);
        m.sum += section.sum[k];
        m.sum2 += section.sum2[k];
    }
    if (std::fwrite(section.bytes.data(), 1, section.bytes.size(), m.f) != section.bytes.size())
        m.failed("write failed");
    ++m.written;
}

void MrcStackWriter::close() {
    Impl& m = *impl_;
    if (m.written != m.nz) throw InternalError("MrcStackWriter: closed after " + std::to_string(m.written) + " sections");
    const double n = double(m.nx) * m.ny * m.nz, mean = m.sum / n;
    const double rms = std::sqrt(std::max(0.0, m.sum2 / n - mean * mean));
    unsigned char header[1024] = {};
    auto put_i = [&](int index, std::int32_t v) { std::memcpy(header + 4 * index, &v, 4); };
    auto put_f = [&](int index, float v) { std::memcpy(header + 4 * index, &v, 4); };
    const double ps = m.pixel_size > 0 ? m.pixel_size : 1.0;
    put_i(0, m.nx);
    put_i(1, m.ny);
    put_i(2, m.nz);
    put_i(3, m.mode);
    put_i(7, m.nx);  // MX, MY, MZ: one grid step per pixel, so the cell gives the pixel size
    put_i(8, m.ny);
    put_i(9, m.nz);
    put_f(10, float(m.nx * ps));
    put_f(11, float(m.ny * ps));
    put_f(12, float(m.nz * ps));
    put_f(13, 90.f);
    put_f(14, 90.f);
    put_f(15, 90.f);
    put_i(16, 1);
    put_i(17, 2);
    put_i(18, 3);
    put_f(19, float(m.vmin));
    put_f(20, float(m.vmax));
    put_f(21, float(mean));
    put_i(22, 0);      // ISPG 0: an image stack
    put_i(27, 20141);  // NVERSION: MRC2014, revision 1
    put_i(38, kImodStamp);
    put_i(39, m.mode == 0 && m.signed_bytes ? 1 : 0);  // IMOD flags: bit 0 = signed bytes
    std::memcpy(header + 208, "MAP ", 4);
    header[212] = 0x44;  // little-endian machine stamp
    header[213] = 0x44;
    put_f(54, float(rms));
    put_i(55, 1);
    const char label[] = "stackalign: aligned stack";
    std::memcpy(header + 224, label, sizeof label - 1);
    if (std::fseek(m.f, 0, SEEK_SET) != 0 || std::fwrite(header, 1, sizeof header, m.f) != sizeof header)
        m.failed("write failed");
    std::FILE* f = m.f;
    m.f = nullptr;
    if (std::fclose(f) != 0) m.failed("write failed");  // a full disk often shows up only here
}

void write_mrc_stack(const std::string& path, const std::vector<RawFrame>& frames, int mode, double pixel_size,
                     bool signed_bytes) {
    if (frames.empty()) throw InternalError("write_mrc_stack: no frames");
    MrcStackWriter w(path, mode, pixel_size, signed_bytes, frames[0].width, frames[0].height, int(frames.size()));
    for (const RawFrame& f : frames) w.append(f);
    w.close();
}

}  // namespace stackalign
