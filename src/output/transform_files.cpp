#include "transform_files.hpp"

#include <Eigen/Dense>
#include <sstream>

#include "../core/error.hpp"
#include "../core/version.hpp"

namespace stackalign {
namespace {

std::string numbers(const Matrix34& m, bool matrix) {
    std::ostringstream o;
    o.precision(17);
    if (matrix)
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) o << (r || c ? " " : "") << m[r][c];
    else
        o << m[0][3] << " " << m[1][3] << " " << m[2][3];
    return o.str();
}

}  // namespace

Matrix34 target_to_source(const FitResult& fit) {
    Eigen::Matrix3d a;
    Eigen::Vector3d t;
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) a(r, c) = fit.m[r][c];
        t(r) = fit.m[r][3];
    }
    Eigen::FullPivLU<Eigen::Matrix3d> lu(a);
    if (!lu.isInvertible()) throw FitError(name_of(fit.kind) + " fit: its matrix is singular; no transform file can invert it");
    const Eigen::Matrix3d ai = lu.inverse();
    const Eigen::Vector3d ti = -ai * t;
    Matrix34 m{};
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) m[r][c] = ai(r, c);
        m[r][3] = ti(r);
    }
    return m;
}

std::string itk_transform_text(const FitResult& fit) {
    const auto m = target_to_source(fit);
    return "#Insight Transform File V1.0\n#Transform 0\nTransform: AffineTransform_double_3_3\nParameters: " +
           numbers(m, true) + " " + numbers(m, false) + "\nFixedParameters: 0 0 0\n";
}

std::string elastix_transform_text(const FitResult& fit, const std::array<int, 3>& size,
                                   const std::array<double, 3>& spacing) {
    const auto m = target_to_source(fit);
    std::ostringstream o;
    o.precision(17);
    o << "// stackalign " << STACKALIGN_VERSION << ": the " << name_of(fit.kind)
      << " landmark fit, target -> source (apply with: transformix -in SOURCE -tp THIS_FILE -out DIR)\n"
      << "(Transform \"AffineTransform\")\n(NumberOfParameters 12)\n(TransformParameters " << numbers(m, true) << " "
      << numbers(m, false) << ")\n(InitialTransformParametersFileName \"NoInitialTransform\")\n"
      << "(HowToCombineTransforms \"Compose\")\n(FixedImageDimension 3)\n(MovingImageDimension 3)\n"
      << "(FixedInternalImagePixelType \"float\")\n(MovingInternalImagePixelType \"float\")\n"
      << "(Size " << size[0] << " " << size[1] << " " << size[2] << ")\n(Index 0 0 0)\n"
      << "(Spacing " << spacing[0] << " " << spacing[1] << " " << spacing[2] << ")\n(Origin 0 0 0)\n"
      << "(Direction 1 0 0 0 1 0 0 0 1)\n(UseDirectionCosines \"true\")\n(CenterOfRotationPoint 0 0 0)\n"
      << "(ResampleInterpolator \"FinalBSplineInterpolator\")\n(FinalBSplineInterpolationOrder 3)\n"
      << "(Resampler \"DefaultResampler\")\n(DefaultPixelValue 0)\n(ResultImageFormat \"tif\")\n"
      << "(ResultImagePixelType \"float\")\n(CompressResultImage \"false\")\n";
    return o.str();
}

}  // namespace stackalign
