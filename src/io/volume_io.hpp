// One place that knows which file format a 3D volume is in (landmark mode's
// source and target): multi-page TIFF, NRRD (teem's nrrd library: raw or
// gzip, detached headers) or NIfTI-1/2 (nifticlib: .nii, .nii.gz, .hdr/.img),
// chosen by suffix. The voxel size comes from the header where the format
// has one (NRRD `spacings` or `space directions`; NIfTI pixdim).
#pragma once
#include <array>
#include <optional>
#include <string>

#include "../core/image.hpp"

namespace stackalign {

enum class VolumeFormat { tiff, nrrd, nifti };
VolumeFormat volume_format_of(const std::string& path);  // by suffix; TIFF otherwise
std::string to_string(VolumeFormat f);

struct VolumeInfo {
    VolumeFormat format = VolumeFormat::tiff;
    int width = 0, height = 0, depth = 0;
    PixelType type = PixelType::u8;
    std::optional<std::array<double, 3>> spacing;  // x, y, z; unset: the file records none
};

// The header only (InputError naming the file and what is wrong).
VolumeInfo probe_volume(const std::string& path);
// The voxels, x fastest, then y, then z. 64-bit floats are read as 32-bit
// (the search bins them; the refinement works in float).
RawFrame read_volume(const std::string& path);
// By suffix: .nrrd (gzip-encoded), .nhdr is not written; .nii / .nii.gz
// (NIfTI-1); anything else TIFF (no spacing recorded). Atomically
// (core/atomic_file.hpp).
void write_volume(const std::string& path, const RawFrame& volume, const std::array<double, 3>& spacing);

}  // namespace stackalign
