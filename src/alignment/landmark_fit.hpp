// Least-squares transforms fitted to matched landmarks, with iterative
// outlier rejection: fit, drop pairs whose residual exceeds 3 x the robust
// sigma (1.4826 x median residual of the pairs kept), refit, until the kept
// set stops changing.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "../core/enum_names.hpp"
#include "../io/point_files.hpp"

namespace stackalign {

enum class FitKind { none, rigid, affine };
template <>
struct EnumNames<FitKind> {
    static constexpr const char* names[] = {"none", "rigid", "affine"};
};

// A 3D affine map [A | t]: dst = m[:, 0..2] * src + m[:, 3].
using Matrix34 = std::array<std::array<double, 4>, 3>;

struct FitResult {
    FitKind kind = FitKind::rigid;
    Matrix34 m{};                              // dst = m[:, 0..2] * src + m[:, 3]
    std::vector<double> residuals;             // |dst - fit(src)| per pair, every pair
    std::vector<bool> outlier;                 // rejected pairs
    double sigma = 0;                          // robust sigma of the final kept set
    double rms = 0;                            // RMS residual of the kept pairs
    int iterations = 0;
    std::string note;                          // how `m` was refined after the fit, if it was
    Point3 apply(const Point3& p) const;
};

// At least 3 non-collinear pairs (rigid) or 4 non-coplanar pairs (affine);
// FitError otherwise. A pair is an outlier where its residual exceeds 3
// robust sigmas and `least_outlier` (the points' units): matches that agree
// with the fit to a fraction of a voxel are not outliers of it, however
// exact the others are.
FitResult fit_landmarks(const std::vector<Point3>& src, const std::vector<Point3>& dst, FitKind kind,
                        double least_outlier = 1e-6);

// Sets the residual of every pair against `fit.m`, and the RMS of the pairs
// not marked outliers (after a fit, or after `m` was refined).
void measure_residuals(FitResult& fit, const std::vector<Point3>& src, const std::vector<Point3>& dst);

// The report written to fit.txt.
std::string fit_report(const FitResult& fit, const std::vector<std::string>& names, const std::string& units);

}  // namespace stackalign
