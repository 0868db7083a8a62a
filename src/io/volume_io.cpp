#include "volume_io.hpp"

#include <nifti2_io.h>
#include <teem/nrrd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "../core/atomic_file.hpp"
#include "../core/error.hpp"
#include "tiff_io.hpp"

namespace fs = std::filesystem;

namespace stackalign {
namespace {

bool ends_with(std::string s, const std::string& suffix) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

[[noreturn]] void fail(const std::string& path, VolumeFormat f, const std::string& what) {
    throw InputError(path + ": " + what + " (read as " + to_string(f) + " by its suffix)");
}

// ---- NRRD (teem) --------------------------------------------------------------

// teem keeps its error messages in a "biff" stack; the last line is the
// innermost cause, the one a user can act on.
std::string nrrd_error() {
    char* text = biffGetDone(NRRD);
    std::string all = text ? text : "";
    std::free(text);
    while (!all.empty() && (all.back() == '\n' || all.back() == ' ')) all.pop_back();
    const std::size_t cut = all.find_last_of('\n');
    std::string last = cut == std::string::npos ? all : all.substr(cut + 1);
    // "[nrrd] _nrrdHeaderCheck: what": the library and function names go.
    if (const std::size_t b = last.find("] "); !last.empty() && last[0] == '[' && b != std::string::npos) last.erase(0, b + 2);
    if (const std::size_t c = last.find(": "); c != std::string::npos && last.find(' ') > c) last.erase(0, c + 2);
    return last.empty() ? "not a readable NRRD file" : last;
}

struct NrrdDeleter {
    void operator()(Nrrd* n) const { nrrdNuke(n); }
};
struct NrrdIoDeleter {
    void operator()(NrrdIoState* s) const { nrrdIoStateNix(s); }
};

PixelType nrrd_pixel_type(int type, const std::string& path) {
    switch (type) {
        case nrrdTypeUChar: return PixelType::u8;
        case nrrdTypeUShort: return PixelType::u16;
        case nrrdTypeShort: return PixelType::i16;
        case nrrdTypeInt: return PixelType::i32;
        case nrrdTypeFloat:
        case nrrdTypeDouble: return PixelType::f32;
        default:
            fail(path, VolumeFormat::nrrd,
                 std::string("voxel type \"") + airEnumStr(nrrdType, type) +
                     "\" is not supported (expected uchar, ushort, short, int, float or double)");
    }
}

std::unique_ptr<Nrrd, NrrdDeleter> load_nrrd(const std::string& path, bool header_only, VolumeInfo& info) {
    std::unique_ptr<Nrrd, NrrdDeleter> n(nrrdNew());
    std::unique_ptr<NrrdIoState, NrrdIoDeleter> io(nrrdIoStateNew());
    io->skipData = header_only ? 1 : 0;
    if (nrrdLoad(n.get(), path.c_str(), io.get())) fail(path, VolumeFormat::nrrd, nrrd_error());
    if (n->dim != 3 && n->dim != 2)
        fail(path, VolumeFormat::nrrd, std::to_string(n->dim) + " axes; expected a 3D volume (x, y, z)");
    info.format = VolumeFormat::nrrd;
    info.type = nrrd_pixel_type(n->type, path);
    info.width = int(n->axis[0].size);
    info.height = int(n->axis[1].size);
    info.depth = n->dim == 3 ? int(n->axis[2].size) : 1;
    std::array<double, 3> spacing{1, 1, 1};
    bool recorded = true;
    for (unsigned a = 0; a < n->dim; ++a) {
        double s = NAN, direction[NRRD_SPACE_DIM_MAX];
        const int status = nrrdSpacingCalculate(n.get(), a, &s, direction);
        if (status == nrrdSpacingStatusUnknown || status == nrrdSpacingStatusNone || !std::isfinite(s) || s == 0)
            recorded = false;
        else
            spacing[a] = std::fabs(s);
    }
    if (recorded) info.spacing = spacing;
    return n;
}

// ---- NIfTI (nifticlib) ----------------------------------------------------------

struct NiftiDeleter {
    void operator()(nifti_image* n) const { nifti_image_free(n); }
};

PixelType nifti_pixel_type(int datatype, const std::string& path) {
    switch (datatype) {
        case DT_UINT8: return PixelType::u8;
        case DT_UINT16: return PixelType::u16;
        case DT_INT16: return PixelType::i16;
        case DT_INT32: return PixelType::i32;
        case DT_FLOAT32:
        case DT_FLOAT64: return PixelType::f32;
        default:
            fail(path, VolumeFormat::nifti,
                 std::string("datatype ") + nifti_datatype_string(datatype) +
                     " is not supported (expected UINT8, UINT16, INT16, INT32, FLOAT32 or FLOAT64)");
    }
}

std::unique_ptr<nifti_image, NiftiDeleter> load_nifti(const std::string& path, bool header_only, VolumeInfo& info) {
    if (!fs::exists(path)) fail(path, VolumeFormat::nifti, "no such file");
    nifti_set_debug_level(0);  // its messages go to stderr; ours name the file
    std::unique_ptr<nifti_image, NiftiDeleter> n(nifti_image_read(path.c_str(), header_only ? 0 : 1));
    if (!n)
        fail(path, VolumeFormat::nifti,
             header_only ? "not a NIfTI-1 or NIfTI-2 header" : "not a NIfTI-1 or NIfTI-2 file, or its data is cut short");
    if (n->nt > 1 || n->nu > 1 || n->nv > 1 || n->nw > 1)
        fail(path, VolumeFormat::nifti,
             std::to_string(n->ndim) + "D image (" + std::to_string(n->nt) +
                 " time points); expected one 3D volume: extract it first");
    info.format = VolumeFormat::nifti;
    info.type = nifti_pixel_type(n->datatype, path);
    info.width = int(n->nx);
    info.height = int(n->ny);
    info.depth = int(std::max<std::int64_t>(n->nz, 1));
    const double d[3] = {std::fabs(n->dx), std::fabs(n->dy), std::fabs(n->dz)};
    if (d[0] > 0 && d[1] > 0 && (d[2] > 0 || info.depth == 1)) info.spacing = std::array<double, 3>{d[0], d[1], d[2] > 0 ? d[2] : 1.0};
    return n;
}

RawFrame frame_from(const VolumeInfo& info, const void* data, bool from_double) {
    RawFrame f{info.type, info.width, info.height, info.depth, {}};
    const std::size_t n = std::size_t(info.width) * info.height * info.depth;
    f.bytes.resize(n * bytes_per_pixel(info.type));
    if (from_double) {
        const double* in = static_cast<const double*>(data);
        float* out = reinterpret_cast<float*>(f.bytes.data());
        for (std::size_t i = 0; i < n; ++i) out[i] = float(in[i]);
    } else {
        std::memcpy(f.bytes.data(), data, f.bytes.size());
    }
    return f;
}

}  // namespace

std::string to_string(VolumeFormat f) {
    return f == VolumeFormat::nrrd ? "NRRD" : f == VolumeFormat::nifti ? "NIfTI" : "TIFF";
}

VolumeFormat volume_format_of(const std::string& path) {
    if (ends_with(path, ".nrrd") || ends_with(path, ".nhdr")) return VolumeFormat::nrrd;
    if (ends_with(path, ".nii") || ends_with(path, ".nii.gz") || ends_with(path, ".hdr") || ends_with(path, ".hdr.gz"))
        return VolumeFormat::nifti;
    return VolumeFormat::tiff;
}

VolumeInfo probe_volume(const std::string& path) {
    VolumeInfo info;
    switch (volume_format_of(path)) {
        case VolumeFormat::nrrd: load_nrrd(path, true, info); break;
        case VolumeFormat::nifti: load_nifti(path, true, info); break;
        case VolumeFormat::tiff: {
            const TiffInfo t = probe_tiff(path);
            info.width = t.width, info.height = t.height, info.depth = t.pages, info.type = t.type;
            break;
        }
    }
    return info;
}

RawFrame read_volume(const std::string& path) {
    VolumeInfo info;
    switch (volume_format_of(path)) {
        case VolumeFormat::nrrd: {
            const auto n = load_nrrd(path, false, info);
            return frame_from(info, n->data, n->type == nrrdTypeDouble);
        }
        case VolumeFormat::nifti: {
            const auto n = load_nifti(path, false, info);
            return frame_from(info, n->data, n->datatype == DT_FLOAT64);
        }
        case VolumeFormat::tiff: break;
    }
    return read_tiff_volume(path);
}

void write_volume(const std::string& path, const RawFrame& v, const std::array<double, 3>& spacing) {
    const VolumeFormat format = volume_format_of(path);
    write_atomically(path, [&](const std::string& tmp) {
        if (format == VolumeFormat::tiff) return write_tiff_volume(tmp, v);
        if (format == VolumeFormat::nrrd) {
            const int type = v.type == PixelType::u8    ? nrrdTypeUChar
                             : v.type == PixelType::u16 ? nrrdTypeUShort
                             : v.type == PixelType::i16 ? nrrdTypeShort
                             : v.type == PixelType::i32 ? nrrdTypeInt
                                                        : nrrdTypeFloat;
            Nrrd* n = nrrdNew();
            std::unique_ptr<NrrdIoState, NrrdIoDeleter> io(nrrdIoStateNew());
            io->encoding = nrrdEncodingGzip->available() ? nrrdEncodingGzip : nrrdEncodingRaw;
            const bool ok = !nrrdWrap_va(n, const_cast<unsigned char*>(v.bytes.data()), type, 3, std::size_t(v.width),
                                         std::size_t(v.height), std::size_t(v.depth)) &&
                            (nrrdAxisInfoSet_va(n, nrrdAxisInfoSpacing, spacing[0], spacing[1], spacing[2]), true) &&
                            !nrrdSave(tmp.c_str(), n, io.get());
            nrrdNix(n);  // the data is the frame's
            if (!ok) throw OutputError(path + ": cannot write NRRD (" + nrrd_error() + ")");
            return;
        }
        const int datatype = v.type == PixelType::u8    ? DT_UINT8
                             : v.type == PixelType::u16 ? DT_UINT16
                             : v.type == PixelType::i16 ? DT_INT16
                             : v.type == PixelType::i32 ? DT_INT32
                                                        : DT_FLOAT32;
        const int64_t dims[8] = {3, v.width, v.height, v.depth, 1, 1, 1, 1};
        std::unique_ptr<nifti_image, NiftiDeleter> n(nifti_make_new_nim(dims, datatype, 1));
        if (!n) throw OutputError(path + ": cannot make a NIfTI image");
        std::memcpy(n->data, v.bytes.data(), v.bytes.size());
        n->dx = n->pixdim[1] = spacing[0];
        n->dy = n->pixdim[2] = spacing[1];
        n->dz = n->pixdim[3] = spacing[2];
        n->nifti_type = NIFTI_FTYPE_NIFTI1_1;
        if (nifti_set_filenames(n.get(), tmp.c_str(), 0, 1)) throw OutputError(path + ": cannot name a NIfTI file so");
        nifti_image_write(n.get());
        if (!fs::exists(tmp)) throw OutputError(path + ": cannot write NIfTI");
    });
}

}  // namespace stackalign
