#include "landmark_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <sstream>

#include "../core/error.hpp"
#include "../core/median.hpp"
#include "../core/version.hpp"

namespace stackalign {
namespace {

// Kabsch: the rotation R and translation t minimising sum |R s + t - d|^2.
Matrix34 fit_rigid(const std::vector<Point3>& s, const std::vector<Point3>& d, const std::vector<int>& use) {
    Eigen::Vector3d cs = Eigen::Vector3d::Zero(), cd = Eigen::Vector3d::Zero();
    for (int i : use) {
        cs += Eigen::Vector3d(s[i][0], s[i][1], s[i][2]);
        cd += Eigen::Vector3d(d[i][0], d[i][1], d[i][2]);
    }
    cs /= double(use.size());
    cd /= double(use.size());
    Eigen::Matrix3d h = Eigen::Matrix3d::Zero();
    for (int i : use)
        h += (Eigen::Vector3d(s[i][0], s[i][1], s[i][2]) - cs) * (Eigen::Vector3d(d[i][0], d[i][1], d[i][2]) - cd).transpose();
    Eigen::JacobiSVD<Eigen::Matrix3d> svd(h, Eigen::ComputeFullU | Eigen::ComputeFullV);
    // Points on one line leave the rotation about it free.
    if (svd.singularValues()(1) <= 1e-9 * std::max(svd.singularValues()(0), 1e-300))
        throw FitError("rigid fit: the " + std::to_string(use.size()) +
                       " matched points lie on one line; a rotation needs points spread in at least 2 directions "
                       "(add points)");
    Eigen::Matrix3d fix = Eigen::Matrix3d::Identity();
    // A reflection is not a motion: flip the weakest axis instead.
    fix(2, 2) = (svd.matrixV() * svd.matrixU().transpose()).determinant() < 0 ? -1.0 : 1.0;
    const Eigen::Matrix3d r = svd.matrixV() * fix * svd.matrixU().transpose();
    const Eigen::Vector3d t = cd - r * cs;
    Matrix34 m{};
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) m[a][b] = r(a, b);
        m[a][3] = t(a);
    }
    return m;
}

Matrix34 fit_affine(const std::vector<Point3>& s, const std::vector<Point3>& d, const std::vector<int>& use) {
    Eigen::MatrixXd a(use.size(), 4), b(use.size(), 3);
    for (std::size_t k = 0; k < use.size(); ++k) {
        const int i = use[k];
        a.row(k) << s[i][0], s[i][1], s[i][2], 1.0;
        b.row(k) << d[i][0], d[i][1], d[i][2];
    }
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
    if (qr.rank() < 4)
        throw FitError("affine fit: the " + std::to_string(use.size()) +
                         " matched points are coplanar or collinear; an affine transform needs points spread in 3D "
                         "(use fit = \"rigid\", or add points)");
    const Eigen::MatrixXd x = qr.solve(b);  // 4 x 3
    Matrix34 m{};
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) m[r][c] = x(c, r);
    return m;
}

}  // namespace

Point3 FitResult::apply(const Point3& p) const {
    Point3 q{};
    for (int r = 0; r < 3; ++r) q[r] = m[r][0] * p[0] + m[r][1] * p[1] + m[r][2] * p[2] + m[r][3];
    return q;
}

void measure_residuals(FitResult& f, const std::vector<Point3>& src, const std::vector<Point3>& dst) {
    f.residuals.assign(src.size(), 0.0);
    double sum2 = 0;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < src.size(); ++i) {
        const Point3 q = f.apply(src[i]);
        f.residuals[i] = std::hypot(q[0] - dst[i][0], q[1] - dst[i][1], q[2] - dst[i][2]);
        if (!f.outlier[i]) sum2 += f.residuals[i] * f.residuals[i], ++kept;
    }
    f.rms = kept ? std::sqrt(sum2 / double(kept)) : 0.0;
}

FitResult fit_landmarks(const std::vector<Point3>& src, const std::vector<Point3>& dst, FitKind kind,
                        double least_outlier) {
    const std::size_t need = kind == FitKind::rigid ? 3 : 4;
    if (src.size() < need)
        throw FitError(name_of(kind) + " fit: needs at least " + std::to_string(need) + " matched points, got " +
                         std::to_string(src.size()));
    FitResult f;
    f.kind = kind;
    f.outlier.assign(src.size(), false);
    f.residuals.assign(src.size(), 0.0);
    for (f.iterations = 1; f.iterations <= 50; ++f.iterations) {
        std::vector<int> use;
        for (std::size_t i = 0; i < src.size(); ++i)
            if (!f.outlier[i]) use.push_back(int(i));
        f.m = kind == FitKind::rigid ? fit_rigid(src, dst, use) : fit_affine(src, dst, use);
        measure_residuals(f, src, dst);
        std::vector<double> kept;
        for (std::size_t i = 0; i < src.size(); ++i)
            if (!f.outlier[i]) kept.push_back(f.residuals[i]);
        f.sigma = 1.4826 * median(kept);
        const double limit = std::max(3.0 * f.sigma, least_outlier);
        std::vector<bool> next(src.size());
        std::size_t kept_next = 0;
        for (std::size_t i = 0; i < src.size(); ++i) kept_next += !(next[i] = f.residuals[i] > limit);
        if (next == f.outlier || kept_next < need) break;
        f.outlier = next;
    }
    return f;
}

std::string fit_report(const FitResult& f, const std::vector<std::string>& names, const std::string& units) {
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(6);
    int outliers = 0;
    for (bool b : f.outlier) outliers += b;
    o << "# stackalign " << STACKALIGN_VERSION << " " << name_of(f.kind) << " fit of matched landmarks\n"
      << "# target = A * source + t, coordinates in " << units << "\n"
      << "matrix [A | t] (3 x 4):\n";
    for (const auto& row : f.m) o << "  " << row[0] << "  " << row[1] << "  " << row[2] << "  " << row[3] << "\n";
    o.precision(4);
    o << "pairs: " << f.outlier.size() << " matched, " << f.outlier.size() - outliers << " used, " << outliers
      << " rejected as outliers (residual > 3 x robust sigma, sigma = " << f.sigma << ")\n"
      << "rms residual of the pairs used: " << f.rms << "\n"
      << "iterations: " << f.iterations << "\n" << (f.note.empty() ? "" : f.note + "\n")
      << "\nname,residual,status\n";
    for (std::size_t i = 0; i < names.size(); ++i)
        o << csv_field(names[i]) << "," << f.residuals[i] << "," << (f.outlier[i] ? "outlier" : "used") << "\n";
    return o.str();
}

}  // namespace stackalign
