// The twins of src/alignment/normal_solver.hpp. The CPU twin forms R^T R
// and factors it by tiles on the host's threads, the same bits whatever
// their number; the CUDA twin forms it on the GPU (R scattered dense,
// cuBLAS's syrk) and keeps its factor there (cuSOLVER's potrf and potrs),
// where the host's share had been most of the slab fit's time. Their
// sums run in other orders, so their solutions agree to rounding (about
// 1e-12 of the solution on the slab fit's matrices), not bit for bit, and
// the smooth errors fitted to them within 1e-9 px (tests/test_slab_fit.cpp):
// the offsets written, to four decimals, were the same bytes on the bench.
#pragma once
#include <memory>

#include "../../src/alignment/normal_solver.hpp"
#include "../backend.hpp"

namespace stackalign {

FactorNormal normal_factor(const Device& device);

namespace cpu {
std::unique_ptr<NormalSolver> factor_normal(const SparseRows& r, int columns, double weight);
}

}  // namespace stackalign
