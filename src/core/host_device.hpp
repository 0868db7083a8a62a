// STACKALIGN_HD marks a function that the CPU and CUDA twins compile from one
// text (the arithmetic both must round alike): __host__ __device__ under
// nvcc, nothing for the host compiler, so host code never needs nvcc to be read.
#pragma once

#if defined(__CUDACC__)
#define STACKALIGN_HD __host__ __device__
#else
#define STACKALIGN_HD
#endif

// STACKALIGN_UNROLL before a loop of constant trip count: nvcc unrolls it,
// so a small array it indexes stays in registers; the host compiler ignores it.
#if defined(__CUDACC__)
#define STACKALIGN_UNROLL _Pragma("unroll")
#else
#define STACKALIGN_UNROLL
#endif

// STACKALIGN_INLINE in place of `inline` on a shared function that a CPU
// twin calls inside a loop it runs on vector units: always inlined there (a
// call per pixel keeps the loop scalar), whatever the compiler's size limits.
#if defined(__CUDACC__)
#define STACKALIGN_INLINE __forceinline__
#else
#define STACKALIGN_INLINE inline __attribute__((always_inline))
#endif
