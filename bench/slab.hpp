// `bench slab`: the slab fit's normal equations (src/alignment/slab_consistency.hpp)
// factored and solved on the CPU and on the GPU side by side (bench/slab.cpp).
#pragma once

namespace stackalign::bench {
void slab();
}
