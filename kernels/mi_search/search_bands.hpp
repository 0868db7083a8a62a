// How many blocks share each candidate of a banded histogram launch
// (hist_shared_band, mi_search_cuda.cu): host arithmetic, kept here so the
// CPU-only tests check it.
//
// One block per candidate unless a launch's candidates fill less than the
// blocks the GPU holds at once and the window is large. At acquisition size
// (61 x 4096^2, `bash bench/device.sh acquisition`) the search near a peak
// (81 lattice shifts, then 25-49 of the climb, over a 3956^2 window) took
// 31-38 ms a pair on the H200 with a block per candidate, each walking 15.6M
// pixel pairs while most SMs waited; 9-14 ms in bands (run.json's searchers).
//
// Every block of a launch does the same work, so a launch takes its waves
// (ceil(blocks / slots)) times a block's time, which is 1 / bands of a
// window: the count kept is the one that makes waves / bands least, up to 4
// waves and bands of at least kMinSearchBandPixels. Bands that fill the slots
// twice, rounded up, leave a third wave a few blocks full: 49 shifts x 22
// bands = 1078 blocks on 528 slots (132 SMs). On the H200 (`build/bench
// loads build/bench-stages/acquisition_cuda.toml` after `bench stages
// acquisition`, alternating with that rule in one call) a 4096^2 pair's
// search with a load took 10.19-10.24 ms against 10.75-10.81 with it.
#pragma once
#include <algorithm>

namespace stackalign {

constexpr double kMinSearchBandPixels = 1 << 18;

// `blocks`: the launch's candidates over all its windows; `rows`: a window's
// rows (of all its slices); `pixels`: a window's; `slots`: the blocks the GPU
// holds at once.
inline int search_bands(int blocks, long long rows, double pixels, int slots) {
    if (blocks >= slots || pixels < 2 * kMinSearchBandPixels) return 1;
    const long long most =
        std::max(1LL, std::min({rows, (long long)(pixels / kMinSearchBandPixels), 4LL * slots / blocks}));
    long long best = 1;
    double best_cost = 1.0;  // a wave of whole windows
    for (long long b = 2; b <= most; ++b) {
        const double cost = double((blocks * b + slots - 1) / slots) / double(b);
        if (cost < 0.99 * best_cost) best = b, best_cost = cost;  // more bands only for more than 1 % less time
    }
    return int(best);
}

}  // namespace stackalign
