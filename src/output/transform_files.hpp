// The landmark fit in the forms registration tools apply: an ITK text
// transform (.tfm: ITK, 3D Slicer, ANTs, SimpleITK) and an elastix
// TransformParameters file (transformix).
//
// Both tools' transforms map a point of the fixed image (here the target)
// to the moving image (the source): resampling the source onto the target's
// grid reads the source at T(x) for every target voxel x. So the files hold
// the inverse of the fit (fit: target = A source + t). Coordinates are
// stackalign's: voxel index x voxel size, origin 0, axes as stored; a tool
// must see both volumes with that voxel size and a zero origin.
#pragma once
#include <array>
#include <string>

#include "../alignment/landmark_fit.hpp"

namespace stackalign {

// "#Insight Transform File V1.0" with one AffineTransform_double_3_3.
std::string itk_transform_text(const FitResult& fit);

// The target's grid (size in voxels, voxel size) is the output grid of
// transformix.
std::string elastix_transform_text(const FitResult& fit, const std::array<int, 3>& target_size,
                                   const std::array<double, 3>& voxel_size);

// The inverse of the fit as [A | t] (source = A target + t); FitError when
// the fit's matrix is singular.
Matrix34 target_to_source(const FitResult& fit);

}  // namespace stackalign
