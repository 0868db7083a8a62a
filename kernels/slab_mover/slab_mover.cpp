// slab_mover.hpp's entry point and its CPU twin.
#include "slab_mover.hpp"

namespace stackalign {

namespace cpu {
void move_views(const BoxedViews& b, const MovedBlock& block, const double* across, int sets, const double* along,
                double* out) {
    const std::size_t column = std::size_t(b.views) * block.width;
#pragma omp parallel for collapse(2) schedule(static)
    for (int s = 0; s < sets; ++s)
        for (int v = 0; v < b.views; ++v)
            for (int j = 0; j < block.rows; ++j) {
                double* o = out + (std::size_t(s) * block.rows + j) * column + std::size_t(v) * block.width;
                for (int i = 0; i < block.width; ++i)
                    o[i] = moved_pixel(b.means.data(), b.x0, b.y0, b.width, b.rows, b.factor, block, v, i, j,
                                       across[std::size_t(s) * b.views + v], along[v]);
            }
}
}  // namespace cpu

void move_views(const BoxedViews& b, const MovedBlock& block, const std::vector<double>& across, int sets,
                const std::vector<double>& along, double* out, const Device& device) {
    if (device.backend != Backend::cuda) return cpu::move_views(b, block, across.data(), sets, along.data(), out);
    cuda::keep_boxed_views(b, block, device.gpu)->move_to_host(across.data(), sets, along.data(), out);
}

}  // namespace stackalign
