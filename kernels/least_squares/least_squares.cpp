// least_squares.hpp's entry point, and the CUDA twin seen through
// LeastSquaresResidual (the .cu keeps to plain pointers).
#include "least_squares.hpp"

#include <string>
#include <vector>

#include "../../src/core/error.hpp"
#include "least_squares_gpu.hpp"

namespace stackalign {
namespace {

cuda::CompressedRows view(const CompressedSparseRows& a) {
    return {a.rows(), a.columns, a.start.data(), a.column.data(), a.value.data()};
}

class GpuResidual final : public LeastSquaresResidual {
public:
    GpuResidual(std::unique_ptr<cuda::GpuLeastSquares> g, int rows) : g_(std::move(g)), rows_(rows) {}
    Eigen::MatrixXd residual(const Eigen::MatrixXd& b) const override {
        check(b);
        Eigen::MatrixXd r(b.rows(), b.cols());
        g_->residual(b.data(), int(b.cols()), r.data());
        return r;
    }
    std::vector<double> sums_of_squares(const Eigen::MatrixXd& b, int group) const override {
        check(b);
        if (group <= 0 || b.cols() % group)
            throw InternalError("least squares: " + std::to_string(b.cols()) + " columns in groups of " +
                                std::to_string(group));
        std::vector<double> sums(std::size_t(b.cols() / group));
        g_->sums_of_squares(b.data(), int(b.cols()), group, sums.data());
        return sums;
    }

private:
    void check(const Eigen::MatrixXd& b) const {
        if (b.rows() != rows_)
            throw InternalError("least squares: " + std::to_string(b.rows()) + " rows for a matrix of " +
                                std::to_string(rows_));
    }

    std::unique_ptr<cuda::GpuLeastSquares> g_;
    int rows_;
};

}  // namespace

FactorLeastSquares least_squares(const Device& device) {
    if (device.backend == Backend::cuda)
        return [gpu = device.gpu](std::shared_ptr<const MirroredLeastSquares> s) -> std::unique_ptr<LeastSquaresResidual> {
            auto g = cuda::factor_on_gpu({view(s->p), view(s->pt), view(s->even), view(s->odd), s->weight}, gpu);
            if (!g) return nullptr;
            return std::make_unique<GpuResidual>(std::move(g), s->p.rows());
        };
    return [](std::shared_ptr<const MirroredLeastSquares> s) { return cpu::factor_least_squares(std::move(s)); };
}

}  // namespace stackalign
