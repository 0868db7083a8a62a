// Block-wide reductions (CUB) for every kernel folder: a block's sum, min,
// max or any associative operation of one value per thread, the result in
// every thread; and the operations themselves.
#pragma once
#include <cub/block/block_reduce.cuh>

namespace stackalign::cuda {

struct Sum {
    template <typename T>
    __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
    __device__ double operator()(double a, double b) const { return fmax(a, b); }
};
struct Min {
    __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const { return a < b ? a : b; }
};
// Two (min, max) ranges merged: for a block's reduction or a device-wide
// one (cub::DeviceReduce, hence __host__ too).
struct MergeRange {
    __host__ __device__ float2 operator()(float2 a, float2 b) const {
        return make_float2(fminf(a.x, b.x), fmaxf(a.y, b.y));
    }
};

// For a kernel of THREADS threads. The barrier first: the storage may still
// be read from a previous call.
template <int THREADS, typename T, typename Op>
__device__ T block_reduce(T v, Op op) {
    using Reduce = cub::BlockReduce<T, THREADS>;
    __shared__ typename Reduce::TempStorage storage;
    __shared__ T result;
    __syncthreads();
    const T r = Reduce(storage).Reduce(v, op);
    if (threadIdx.x == 0) result = r;
    __syncthreads();
    return result;
}
template <int THREADS, typename T>
__device__ T block_sum(T v) {
    return block_reduce<THREADS>(v, Sum{});
}

}  // namespace stackalign::cuda
