// `bench slab`: what the slab fit's algebra costs (the projector, the
// normal matrices formed and factored, the residual's products and solves)
// with the CPU twin (the host's threads) and the CUDA twin, at the shapes the stage meets on a 121 x 512^2 slab at
// +-60 degrees: the depth scan's supports 64 coarse px wide, 2 to 32 deep,
// each solved for nine places of 45 slices, and the fit's 128 px wide and
// 25 deep, solved for six error shapes' effects on 90 slices. Each line
// is one shape: building the projector and normal matrices with the
// factor, of which the factor (the twin's own: the rest is the host's
// rays, transposes and halves, the same on both), the residual, and the
// largest difference of the two residuals.
#include "slab.hpp"

#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "../kernels/cuda_api.hpp"
#include "../kernels/least_squares/least_squares.hpp"
#include "../src/alignment/slab_consistency.hpp"

namespace stackalign::bench {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Timed {
    double build = 0, factor = 0, solve = 0;
    Eigen::MatrixXd residual;
};

Timed timed(int width, int depth, const std::vector<double>& tilts, const FactorLeastSquares& factor, const Eigen::MatrixXd& b) {
    Timed t;
    const FactorLeastSquares timed_factor = [&](const MirroredLeastSquares& s) {
        const auto at = Clock::now();
        std::unique_ptr<LeastSquaresResidual> r = factor(s);
        t.factor = seconds_since(at);
        return r;
    };
    auto start = Clock::now();
    const SlabConsistency slab(width, depth, tilts, timed_factor);
    t.build = seconds_since(start);
    start = Clock::now();
    t.residual = slab.residual(b);
    t.solve = seconds_since(start);
    return t;
}
}  // namespace

void slab() {
    std::vector<double> tilts;
    for (int k = -60; k <= 60; ++k) tilts.push_back(k);
    const bool gpu = cuda::device_count() > 0;
    const FactorLeastSquares on_cpu = least_squares(Device{}), on_gpu = gpu ? least_squares(Device{Backend::cuda, 0}) : nullptr;
    struct Shape {
        int width, depth, columns;
    };
    std::vector<Shape> shapes;
    for (int d = 2; d <= 32; d = std::max(d + 1, int(std::lround(d * 1.15)))) shapes.push_back({64, d, 9 * 45});
    shapes.push_back({128, 25, 6 * 90});
    if (gpu) {  // the GPU's context and cuSOLVER's first handle, outside the table
        Eigen::MatrixXd b = Eigen::MatrixXd::Ones(tilts.size() * 16, 1);
        timed(16, 2, tilts, on_gpu, b);
    }
    std::printf("%-22s %10s %10s %10s %10s %10s %10s %9s %12s\n", "shape (w x d, cols)", "cpu build", "of it fac",
                "cpu solve", "gpu build", "of it fac", "gpu solve", "ratio", "max diff");
    double cpu_total = 0, gpu_total = 0, host_build = 0, gpu_factor = 0;
    std::mt19937 rng(1);
    std::normal_distribution<double> g;
    for (const Shape& s : shapes) {
        Eigen::MatrixXd b(Eigen::Index(tilts.size()) * s.width, s.columns);
        for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = g(rng);
        const Timed c = timed(s.width, s.depth, tilts, on_cpu, b);
        cpu_total += c.build + c.solve;
        char label[64];
        std::snprintf(label, sizeof label, "%d x %d, %d", s.width, s.depth, s.columns);
        if (!gpu) {
            host_build += c.build - c.factor;
            std::printf("%-22s %10.4f %10.4f %10.4f\n", label, c.build, c.factor, c.solve);
            continue;
        }
        const Timed d = timed(s.width, s.depth, tilts, on_gpu, b);
        gpu_total += d.build + d.solve;
        host_build += d.build - d.factor, gpu_factor += d.factor;
        std::printf("%-22s %10.4f %10.4f %10.4f %10.4f %10.4f %10.4f %8.1fx %12.3g\n", label, c.build, c.factor, c.solve,
                    d.build, d.factor, d.solve, (c.build + c.solve) / (d.build + d.solve),
                    (c.residual - d.residual).cwiseAbs().maxCoeff());
    }
    std::printf("all shapes: cpu %.3f s", cpu_total);
    if (gpu) std::printf(", gpu %.3f s (%.1fx; its factors %.3f s)", gpu_total, cpu_total / gpu_total, gpu_factor);
    std::printf("; the host's rays, transposes and halves %.3f s (%s)", host_build, gpu ? "the GPU's builds" : "the CPU's");
    std::printf("\n");
}

}  // namespace stackalign::bench
