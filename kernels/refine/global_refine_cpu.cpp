// The global refinement's search (shared by both backends) and the CPU twin
// of its histograms.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "global_refine.hpp"
#include "pair_moments.hpp"
#include "pattern_search.hpp"

namespace stackalign {
namespace {

class CpuAffineStatistics : public AffineStatistics {
public:
    CpuAffineStatistics(const RefineFeatures& ref, const RefineFeatures& mov, const RefineParams& p, const SampleGrid& g)
        : ref_(ref), mov_(mov), p_(p), grid_(g) {
        // NCC's reference values, once for every batch (the GPU twin reads them back per sample).
        if (p.metric != Metric::ncc) return;
        const RefineImage rg{ref.coefficients.width, ref.coefficients.height, ref.coefficients.depth};
        reference_.resize(std::size_t(g.count()));
#pragma omp parallel for schedule(static)
        for (long long i = 0; i < g.count(); ++i) {
            int x, y, z;
            g.sample(i, x, y, z);
            reference_[std::size_t(i)] = reference_value(ref.coefficients.pixels.data(), rg, x, y, z);
        }
    }
    std::vector<std::uint64_t> operator()(const std::vector<Affine3>& transforms) override {
        const std::size_t size = statistics_size(p_);
        const int n = int(transforms.size());
        const bool moments = p_.metric == Metric::ncc;
        const RefineImage g{mov_.coefficients.width, mov_.coefficients.height, mov_.coefficients.depth};
        std::vector<std::uint64_t> out(std::size_t(n) * size, 0);
        const int nx = grid_.nx(), ny = grid_.ny(), nz = grid_.nz();
        // One (transform, slab of sample planes) per task: statistics stay per
        // thread, added at the end (integers: the order does not matter).
#pragma omp parallel
        {
            std::vector<std::uint64_t> local(std::size_t(n) * size, 0);
#pragma omp for schedule(dynamic, 1) collapse(2) nowait
            for (int t = 0; t < n; ++t)
                for (int kz = 0; kz < nz; ++kz) {
                    std::uint64_t* h = local.data() + std::size_t(t) * size;
                    PairMoments m;
                    const int z = grid_.z(kz);
                    for (int ky = 0; ky < ny; ++ky) {
                        const int y = grid_.y(ky);
                        for (int kx = 0; kx < nx; ++kx) {
                            const int x = grid_.x(kx);
                            float b;
                            if (!affine_sample(mov_.coefficients.pixels.data(), g, transforms[t], x, y, z, grid_.margin, b))
                                continue;
                            if (moments)
                                m.add(reference_[(std::size_t(kz) * ny + ky) * nx + kx], b);
                            else
                                parzen_add(ref_.smooth.at(x, y, z), b, p_, p_.mov_levels.knots,
                                           [&](int bin, std::uint32_t w) { h[bin] += w; });
                        }
                    }
                    if (moments)
                        for (int k = 0; k < kMomentCount; ++k) h[k] += static_cast<std::uint64_t>(m.m[k]);
                }
#pragma omp critical
            for (std::size_t i = 0; i < out.size(); ++i) out[i] += local[i];
        }
        return out;
    }

private:
    const RefineFeatures& ref_;
    const RefineFeatures& mov_;
    RefineParams p_;
    SampleGrid grid_;
    std::vector<float> reference_;  // NCC: the reference's value at each sample, sample order
};

Eigen::Matrix3d rotation(const Eigen::Vector3d& w) {
    const double angle = w.norm();
    if (angle == 0) return Eigen::Matrix3d::Identity();
    return Eigen::AngleAxisd(angle, w / angle).toRotationMatrix();
}

struct Physical {
    Eigen::Matrix3d a;
    Eigen::Vector3d t;
};

}  // namespace

namespace cpu {
std::unique_ptr<AffineStatistics> make_affine_statistics(const RefineFeatures& ref, const RefineFeatures& mov,
                                                         const RefineParams& p, const SampleGrid& grid) {
    return std::make_unique<CpuAffineStatistics>(ref, mov, p, grid);
}
}  // namespace cpu

GlobalRefineResult refine_transform(const Matrix34& start, bool rigid, const std::array<double, 3>& voxel,
                                    const std::array<int, 3>& ref_size, const RefineParams& p,
                                    AffineStatistics& statistics) {
    Physical s0;
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) s0.a(r, c) = start[r][c];
        s0.t(r) = start[r][3];
    }
    const Eigen::Vector3d size(voxel[0], voxel[1], voxel[2]);
    const Eigen::Vector3d centre = (Eigen::Vector3d(ref_size[0] - 1, ref_size[1] - 1, ref_size[2] - 1) / 2).cwiseProduct(size);
    const Eigen::Vector3d mapped_centre = s0.a * centre + s0.t;
    const double radius = std::max(centre.norm(), size.minCoeff());
    const int params = rigid ? 6 : 12;

    // theta: [0..2] translation, then the rotation vector (rigid) or the 9
    // entries of D (affine), applied about the mapped centre.
    auto physical = [&](const std::vector<double>& theta) {
        Eigen::Matrix3d change;
        if (rigid) {
            change = rotation({theta[3], theta[4], theta[5]});
        } else {
            change = Eigen::Matrix3d::Identity();
            for (int k = 0; k < 9; ++k) change(k / 3, k % 3) += theta[3 + k];
        }
        Physical out;
        out.a = change * s0.a;
        out.t = change * (s0.t - mapped_centre) + mapped_centre + Eigen::Vector3d(theta[0], theta[1], theta[2]);
        return out;
    };
    auto in_voxels = [&](const Physical& t) {
        Affine3 v;
        for (int r = 0; r < 3; ++r) {
            for (int c = 0; c < 3; ++c) v.m[r][c] = float(t.a(r, c) * size(c) / size(r));
            v.m[r][3] = float(t.t(r) / size(r));
        }
        return v;
    };
    // One voxel of motion at the volume's rim, per parameter.
    std::vector<double> unit(params);
    for (int k = 0; k < 3; ++k) unit[k] = size(k);
    for (int k = 3; k < params; ++k) unit[k] = (rigid ? size.minCoeff() : size((k - 3) / 3)) / radius;

    auto scores = [&](const std::vector<std::vector<double>>& candidates) {
        std::vector<Affine3> batch;
        for (const auto& c : candidates) batch.push_back(in_voxels(physical(c)));
        return refine_scores(statistics(batch), p);
    };
    const PatternSearchResult found = pattern_search(unit, scores);
    GlobalRefineResult result;
    result.mi_start = found.score_start;
    result.mi_end = found.score_end;
    result.batches = found.batches;
    result.evaluations = found.evaluations;
    const std::vector<double>& theta = found.theta;
    const Physical answer = physical(theta);
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) result.m[r][c] = answer.a(r, c);
        result.m[r][3] = answer.t(r);
    }
    return result;
}

}  // namespace stackalign
