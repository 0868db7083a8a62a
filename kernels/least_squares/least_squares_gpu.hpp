// The CUDA twin of least_squares.hpp in plain C++ (no Eigen, which the .cu
// does not need).
#pragma once
#include <functional>
#include <memory>

namespace stackalign::cuda {

// A sparse matrix rows x columns: row i's entries start[i] .. start[i + 1]
// - 1 of `column` and `value`.
struct CompressedRows {
    int rows = 0, columns = 0;
    const int *start = nullptr, *column = nullptr;
    const double* value = nullptr;
};

// P, P^T and P in the halves' bases (src/alignment/least_squares.hpp).
struct MirroredRows {
    CompressedRows p, pt, even, odd;
    double weight = 0;
};

class GpuLeastSquares {
public:
    virtual ~GpuLeastSquares() = default;
    // `b` and `residual`: p.rows x cols, column-major, on the host.
    virtual void residual(const double* b, int cols, double* residual) const = 0;
    // The residual's sum of squares over each `group` columns in turn.
    virtual void sums_of_squares(const double* b, int cols, int group, double* sums) const = 0;
    // The same for columns `write` puts straight into GPU memory (its first
    // argument, p.rows x cols, column-major), queuing its work on the
    // stream it is given (a cudaStream_t): nothing crosses the bus.
    using WriteColumns = std::function<void(double* columns, void* stream)>;
    virtual void sums_of_squares_written(const WriteColumns& write, int cols, int group, double* sums) const = 0;
};

// The system uploaded and its halves factored on `gpu`; nullptr where a
// half's normal matrix is not positive definite.
std::unique_ptr<GpuLeastSquares> factor_on_gpu(const MirroredRows& system, int gpu);

// The libraries opened and `handles` handles of each made on `gpu` and kept
// for factor_on_gpu's calls.
void open_least_squares(int gpu, int handles);

}  // namespace stackalign::cuda
