// The CUDA twin of normal_solve.hpp in plain C++ (no Eigen, which the .cu
// does not need): R^T R + w I formed from R's rows and factored on one GPU,
// solved against host columns.
#pragma once
#include <memory>

namespace stackalign::cuda {

class GpuCholesky {
public:
    virtual ~GpuCholesky() = default;
    // `x`: n x cols, column-major, on the host; overwritten by A^-1 x.
    virtual void solve_in_place(double* x, int cols) const = 0;
};

// R in compressed rows: row i's entries start[i] .. start[i + 1] - 1 of
// `column` and `value`; R is `rows` x `columns`. nullptr where R^T R +
// weight I is not positive definite.
struct CompressedRows {
    int rows = 0, columns = 0;
    const int *start = nullptr, *column = nullptr;
    const double* value = nullptr;
};
std::unique_ptr<GpuCholesky> factor_on_gpu(const CompressedRows& r, double weight, int gpu);

}  // namespace stackalign::cuda
