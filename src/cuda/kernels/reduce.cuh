// Combining operations and warp/block reductions for generated reduce, softmax, arg-reduce and
// normalisation kernels. The combining rules are the reference target's (src/ops/reduce.cpp):
// integer sums and products wrap instead of being undefined on overflow, and a NaN anywhere in a
// max/min wins. Names carry cx_reduce_ where math.cuh has a function of the same job, so that a
// kernel can include both.
#pragma once

#include "conflux/types.cuh"

// Integer arithmetic through unsigned so that overflow wraps, as in the reference target.
__device__ __forceinline__ float cx_reduce_add(float a, float b) {
    return a + b;
}
__device__ __forceinline__ double cx_reduce_add(double a, double b) {
    return a + b;
}
__device__ __forceinline__ long long cx_reduce_add(long long a, long long b) {
    return static_cast<long long>(static_cast<unsigned long long>(a) +
                                  static_cast<unsigned long long>(b));
}
__device__ __forceinline__ float cx_reduce_mul(float a, float b) {
    return a * b;
}
__device__ __forceinline__ double cx_reduce_mul(double a, double b) {
    return a * b;
}
__device__ __forceinline__ long long cx_reduce_mul(long long a, long long b) {
    return static_cast<long long>(static_cast<unsigned long long>(a) *
                                  static_cast<unsigned long long>(b));
}
__device__ __forceinline__ float cx_reduce_abs(float a) {
    return fabsf(a);
}
__device__ __forceinline__ double cx_reduce_abs(double a) {
    return fabs(a);
}
__device__ __forceinline__ long long cx_reduce_abs(long long a) {
    return a < 0 ? static_cast<long long>(0ULL - static_cast<unsigned long long>(a)) : a;
}

__device__ __forceinline__ float cx_reduce_sqrt(float a) {
    return sqrtf(a);
}
__device__ __forceinline__ double cx_reduce_sqrt(double a) {
    return sqrt(a);
}
__device__ __forceinline__ float cx_reduce_exp(float a) {
    return expf(a);
}
__device__ __forceinline__ double cx_reduce_exp(double a) {
    return exp(a);
}
__device__ __forceinline__ float cx_reduce_log(float a) {
    return logf(a);
}
__device__ __forceinline__ double cx_reduce_log(double a) {
    return log(a);
}

// The combining operations, as function objects so that one reduction template serves all.
struct cx_op_add {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        return cx_reduce_add(a, b);
    }
};
struct cx_op_mul {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        return cx_reduce_mul(a, b);
    }
};
// NaN wins whichever side it is on, so the order of combination cannot hide it.
struct cx_op_max {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        return (b > a || b != b) ? b : a;
    }
};
struct cx_op_min {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        return (b < a || b != b) ? b : a;
    }
};

// A candidate of argmax/argmin: index < 0 means "no element seen yet".
template <class T> struct cx_arg {
    T value;
    long long index;
};

// Prefers, in order: a NaN (the first one, or the last with Last), the larger (Max) or smaller
// value, then the first index (the last with Last). That is a total order on candidates, so any
// combination order gives the reference target's sequential answer.
template <bool Max, bool Last> struct cx_op_arg {
    template <class T>
    __device__ __forceinline__ cx_arg<T> operator()(cx_arg<T> a, cx_arg<T> b) const {
        if (a.index < 0) return b;
        if (b.index < 0) return a;
        const bool a_nan = a.value != a.value;
        const bool b_nan = b.value != b.value;
        bool b_wins;
        if (a_nan != b_nan)
            b_wins = b_nan;
        else if (a_nan || a.value == b.value)
            b_wins = Last ? b.index > a.index : b.index < a.index;
        else
            b_wins = Max ? b.value > a.value : b.value < a.value;
        return b_wins ? b : a;
    }
};

// top_k's rank order (src/ops/top_k.cpp): value a at index ia comes before b at ib when it is
// larger (smaller unless Largest), NaN counting as larger than every number, and equal values
// (NaNs among themselves) by the smaller index. A strict total order on (value, index).
template <bool Largest, class T>
__device__ __forceinline__ bool cx_top_k_before(T a, long long ia, T b, long long ib) {
    const bool a_nan = a != a;
    const bool b_nan = b != b;
    if (a_nan != b_nan) return Largest ? a_nan : b_nan;
    if (a_nan || a == b) return ia < ib;
    return Largest ? a > b : a < b;
}

template <class T> __device__ __forceinline__ T cx_shfl_xor(T v, int lane_mask) {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
template <class T> __device__ __forceinline__ cx_arg<T> cx_shfl_xor(cx_arg<T> v, int lane_mask) {
    cx_arg<T> r;
    r.value = __shfl_xor_sync(0xffffffffu, v.value, lane_mask);
    r.index = __shfl_xor_sync(0xffffffffu, v.index, lane_mask);
    return r;
}

// Every lane of a full warp gets the combination of all 32 lanes' values.
template <class T, class Op> __device__ __forceinline__ T cx_warp_reduce(T v, Op op) {
    for (int mask = 16; mask > 0; mask /= 2)
        v = op(v, cx_shfl_xor(v, mask));
    return v;
}

template <class T> __device__ __forceinline__ T cx_shfl(T v, int lane) {
    return __shfl_sync(0xffffffffu, v, lane);
}
template <class T> __device__ __forceinline__ cx_arg<T> cx_shfl(cx_arg<T> v, int lane) {
    cx_arg<T> r;
    r.value = __shfl_sync(0xffffffffu, v.value, lane);
    r.index = __shfl_sync(0xffffffffu, v.index, lane);
    return r;
}

// Every lane gets lane 0's combination, so all lanes see the same bits (the butterfly combines
// in a different order on each lane, and a row's elements must all be scaled by one sum).
template <class T, class Op> __device__ __forceinline__ T cx_warp_allreduce(T v, Op op) {
    return cx_shfl(cx_warp_reduce(v, op), 0);
}

// Every thread of the block gets the combination of all threads' values. blockDim.x must be a
// multiple of 32 and at most 1024, and every thread of the block must call it. The warps'
// partials are combined in warp order by every thread, so all threads see the same bits. Safe to
// call several times in a row: the first barrier keeps a call from overwriting partials that
// threads are still reading from the previous one.
template <class T, class Op> __device__ T cx_block_reduce(T v, Op op) {
    __shared__ T partials[32];
    const unsigned lane = threadIdx.x % 32u;
    const unsigned warp = threadIdx.x / 32u;
    const unsigned warps = blockDim.x / 32u;
    v = cx_warp_reduce(v, op);
    __syncthreads();
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    T total = partials[0];
    for (unsigned w = 1; w < warps; ++w)
        total = op(total, partials[w]);
    return total;
}
