// normal_solve.hpp's entry point, and the CUDA twin seen through
// NormalSolver (the .cu keeps to plain pointers).
#include "normal_solve.hpp"

#include <string>
#include <vector>

#include "../../src/core/error.hpp"
#include "normal_solve_gpu.hpp"

namespace stackalign {
namespace {

class GpuNormalSolver final : public NormalSolver {
public:
    GpuNormalSolver(std::unique_ptr<cuda::GpuCholesky> c, int n) : c_(std::move(c)), n_(n) {}
    void solve_in_place(Eigen::MatrixXd& x) const override {
        if (x.rows() != n_) throw InternalError("normal solve: " + std::to_string(x.rows()) + " rows for a matrix of " +
                                                std::to_string(n_));
        c_->solve_in_place(x.data(), int(x.cols()));
    }

private:
    std::unique_ptr<cuda::GpuCholesky> c_;
    int n_;
};

}  // namespace

FactorNormal normal_factor(const Device& device) {
    if (device.backend == Backend::cuda)
        return [gpu = device.gpu](const SparseRows& r, int columns, double weight) -> std::unique_ptr<NormalSolver> {
            const CompressedSparseRows h = compressed(r);
            auto c = cuda::factor_on_gpu({int(r.size()), columns, h.start.data(), h.column.data(), h.value.data()},
                                         weight, gpu);
            if (!c) return nullptr;
            return std::make_unique<GpuNormalSolver>(std::move(c), columns);
        };
    return [](const SparseRows& r, int columns, double weight) { return cpu::factor_normal(r, columns, weight); };
}

}  // namespace stackalign
