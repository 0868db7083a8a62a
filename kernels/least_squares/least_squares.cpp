// least_squares.hpp's entry point, and the CUDA twin seen through
// LeastSquaresResidual (the .cu keeps to plain pointers).
#include "least_squares.hpp"

#include <vector>

#include "least_squares_gpu.hpp"

namespace stackalign {
namespace {

cuda::CompressedRows view(const CompressedSparseRows& a) {
    return {a.rows(), a.columns, a.start.data(), a.column.data(), a.value.data()};
}

class GpuResidual final : public LeastSquaresResidual {
public:
    GpuResidual(std::unique_ptr<cuda::GpuLeastSquares> g, int rows) : LeastSquaresResidual(rows), g_(std::move(g)) {}

private:
    bool sums_of_squares_written_of(const WriteColumnsOnGpu& write, int cols, int group,
                                    std::vector<double>& sums) const override {
        sums.assign(std::size_t(cols / group), 0.0);
        g_->sums_of_squares_written(write, cols, group, sums.data());
        return true;
    }
    Eigen::MatrixXd residual_of(const Eigen::MatrixXd& b) const override {
        Eigen::MatrixXd r(b.rows(), b.cols());
        g_->residual(b.data(), int(b.cols()), r.data());
        return r;
    }
    std::vector<double> sums_of_squares_of(const Eigen::MatrixXd& b, int group) const override {
        std::vector<double> sums(std::size_t(b.cols() / group));
        g_->sums_of_squares(b.data(), int(b.cols()), group, sums.data());
        return sums;
    }

    std::unique_ptr<cuda::GpuLeastSquares> g_;
};

}  // namespace

std::future<void> prepare_least_squares(const Device& device, int handles) {
    if (device.backend != Backend::cuda) return {};
    return std::async(std::launch::async, [gpu = device.gpu, handles] {
        try {
            cuda::open_least_squares(gpu, handles);
        } catch (...) {
        }
    });
}

FactorLeastSquares least_squares(const Device& device) {
    if (device.backend == Backend::cuda)
        return [gpu = device.gpu](const MirroredLeastSquares& s) -> std::unique_ptr<LeastSquaresResidual> {
            auto g = cuda::factor_on_gpu({view(*s.p), view(*s.pt), view(s.even), view(s.odd), s.weight}, gpu);
            if (!g) return nullptr;
            return std::make_unique<GpuResidual>(std::move(g), s.p->rows());
        };
    return [](const MirroredLeastSquares& s) { return cpu::factor_least_squares(s); };
}

}  // namespace stackalign
