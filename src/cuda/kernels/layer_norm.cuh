// Layer normalisation of rows that are dense in memory, read once: each row's values stay in
// registers while its mean and then the centred sum of squares are formed (the two-pass rule of
// the reference, without reading x twice more), then y is written. A row belongs to a group of
// Threads threads (a power of two: part of a warp, or the whole block for long rows) that move
// Vec elements at a time (16 bytes for f16/bf16 and f32), so loads and stores are as wide as the
// row allows. normalization_codegen.cpp chooses Threads and Vec and keeps its general kernel for
// rows that are not dense or do not fit in registers. Not Centered (RMS normalisation), the mean
// is 0 and its sum is skipped.
#pragma once

#include "conflux/reduce.cuh"
#include "conflux/types.cuh"

// The sum over the group, the same bits on every thread of it (each lane's butterfly adds in
// its own order, so the group's first lane's result is broadcast). Every thread of the warp (or,
// for Threads > 32, of the block) must call it.
template <int Threads> __device__ __forceinline__ float cx_ln_group_sum(float v) {
    if constexpr (Threads > 32) {
        return cx_block_reduce(v, cx_op_add());
    } else {
#pragma unroll
        for (int mask = Threads / 2; mask > 0; mask /= 2)
            v += __shfl_xor_sync(0xffffffffu, v, mask);
        return __shfl_sync(0xffffffffu, v, static_cast<int>(threadIdx.x % 32u) & ~(Threads - 1));
    }
}

// One row: Len elements at x and y (dense), scale and bias (dense, Len each, of type P: T, or
// float beside a 16-bit T). Vec divides Len; x and y are Vec * sizeof(T) aligned, scale and bias
// Vec * sizeof(P). `rank` is the thread's place in its group; a group with `valid` false (past
// the last row) takes part in the sums and touches no memory.
template <class T, class P, int Len, int Vec, int Threads, bool HasBias, bool Centered>
__device__ __forceinline__ void
cx_layer_norm_row(const T* __restrict__ x, const P* __restrict__ scale, const P* __restrict__ bias,
                  T* __restrict__ y, float epsilon, int rank, bool valid) {
    typedef cx_packed<T, Vec> vec;
    typedef cx_packed<P, Vec> parameters;
    constexpr int chunks = (Len / Vec + Threads - 1) / Threads;
    float v[chunks][Vec];
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < chunks; ++c) {
        const int at = (c * Threads + rank) * Vec;
        if (valid && at < Len) {
            const vec in = *reinterpret_cast<const vec*>(x + at);
#pragma unroll
            for (int e = 0; e < Vec; ++e) {
                v[c][e] = cx_load(&in.v[e]);
                sum += v[c][e];
            }
        }
    }
    const float mean = Centered ? cx_ln_group_sum<Threads>(sum) / static_cast<float>(Len) : 0.0f;
    float squares = 0.0f;
#pragma unroll
    for (int c = 0; c < chunks; ++c) {
        if (valid && (c * Threads + rank) * Vec < Len) {
#pragma unroll
            for (int e = 0; e < Vec; ++e) {
                const float d = v[c][e] - mean;
                squares += d * d;
            }
        }
    }
    const float variance = cx_ln_group_sum<Threads>(squares) / static_cast<float>(Len);
    const float inv = 1.0f / sqrtf(variance + epsilon);
    if (!valid) return;
#pragma unroll
    for (int c = 0; c < chunks; ++c) {
        const int at = (c * Threads + rank) * Vec;
        if (at < Len) {
            const parameters s = *reinterpret_cast<const parameters*>(scale + at);
            parameters b;
            if (HasBias) b = *reinterpret_cast<const parameters*>(bias + at);
            vec out;
#pragma unroll
            for (int e = 0; e < Vec; ++e) {
                // Without a bias the reference adds zeros, which turns -0 into +0; so does this.
                const float add = HasBias ? cx_load(&b.v[e]) : 0.0f;
                cx_store(&out.v[e], (v[c][e] - mean) * inv * cx_load(&s.v[e]) + add);
            }
            *reinterpret_cast<vec*>(y + at) = out;
        }
    }
}

// The kernel's body, launched with Block threads per block (Threads itself when Threads > 32):
// the group's row of `rows`, its start in x and y given by the generated offset functions (the
// rows' strides are multiples of Vec, so every row is aligned as the first is). With Vec > 1 and
// a pointer that is not Vec-aligned (a view into a larger buffer), the rows run one element at a
// time; the test is the same for every thread, so no group is split.
template <class T, class P, int Len, int Vec, int Threads, int Block, bool HasBias, bool Centered,
          class XRow, class YRow>
__device__ __forceinline__ void cx_layer_norm(const T* x, const P* scale, const P* bias, T* y,
                                              float epsilon, long long rows, XRow x_row,
                                              YRow y_row) {
    constexpr int groups = Threads > 32 ? 1 : Block / Threads;
    const long long row = static_cast<long long>(blockIdx.x) * groups +
                          (Threads > 32 ? 0 : static_cast<long long>(threadIdx.x) / Threads);
    const int rank = static_cast<int>(threadIdx.x % static_cast<unsigned>(Threads));
    const bool valid = row < rows;
    const long long r = valid ? row : 0;
    const T* xr = x + x_row(r);
    T* yr = y + y_row(r);
    const unsigned long long data =
        reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y);
    const unsigned long long params =
        reinterpret_cast<unsigned long long>(scale) | reinterpret_cast<unsigned long long>(bias);
    if (Vec == 1 || (data % (sizeof(T) * Vec) == 0 && params % (sizeof(P) * Vec) == 0))
        cx_layer_norm_row<T, P, Len, Vec, Threads, HasBias, Centered>(xr, scale, bias, yr, epsilon,
                                                                      rank, valid);
    else
        cx_layer_norm_row<T, P, Len, 1, Threads, HasBias, Centered>(xr, scale, bias, yr, epsilon,
                                                                    rank, valid);
}
