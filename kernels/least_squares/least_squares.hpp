// The twins of src/alignment/least_squares.hpp. The CPU twin forms each
// half's normal matrix and factors it by tiles on the host's threads, the
// same bits whatever their number; the CUDA twin forms them on the GPU (P
// scattered dense, cuBLAS's syrk), factors them there (cuSOLVER's potrf)
// and runs a residual there whole: P^T b, the halves' solves (potrs) and
// b - P x, the columns crossing once each way. The products' sums run in
// the CPU's order on both, bit for bit; the factors' and the solves' in
// other orders, so the residuals agree to rounding (about 1e-12 of their
// size on the slab fit's matrices), not bit for bit, and the smooth errors
// fitted to them within 1e-9 px (tests/test_slab_fit.cpp): the offsets
// written, to four decimals, were the same bytes on the bench.
#pragma once
#include <future>
#include <memory>

#include "../../src/alignment/least_squares.hpp"
#include "../backend.hpp"

namespace stackalign {

FactorLeastSquares least_squares(const Device& device);

// On a GPU, its libraries opened and `handles` handles of each made, on a
// thread of its own, for the factors to come: at their first use they took
// 0.06-0.08 s and 0.06-0.09 s of the slab fit (121 x 512^2 slabs, H100).
// The future's end waits for it; what fails is left for the factors to
// report. Nothing on the CPU.
std::future<void> prepare_least_squares(const Device& device, int handles);

namespace cpu {
std::unique_ptr<LeastSquaresResidual> factor_least_squares(const MirroredLeastSquares& system);
}

}  // namespace stackalign
