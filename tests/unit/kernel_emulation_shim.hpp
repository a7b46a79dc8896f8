// What a generated kernel needs from CUDA to compile as host C++ (force-included by
// cuda_kernel_emulation_test.cpp): the qualifiers as nothing, the thread and block indices as
// variables the test sets before each call, the intrinsics the kernel headers use, and the
// 16-bit conversions with the reference target's rounding. Only kernels whose threads are
// independent can run this way (one call per thread, in order); the block-wide and warp-wide
// operations throw, so a kernel that needs them fails the test instead of computing nonsense.
#pragma once

#include "conflux/ir/half.hpp"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#define CX_HOST_EMULATION 1
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__

struct cx_emulated_dim3 {
    unsigned x = 0, y = 0, z = 0;
};
inline cx_emulated_dim3 threadIdx, blockIdx, blockDim, gridDim;

// Called by the test before each thread's call.
extern "C" void cx_emulation_set_thread(const unsigned* block, const unsigned* thread,
                                        const unsigned* block_dim, const unsigned* grid_dim) {
    blockIdx = {block[0], block[1], block[2]};
    threadIdx = {thread[0], thread[1], thread[2]};
    blockDim = {block_dim[0], block_dim[1], block_dim[2]};
    gridDim = {grid_dim[0], grid_dim[1], grid_dim[2]};
}

struct float2 {
    float x, y;
};
inline float2 make_float2(float x, float y) {
    return {x, y};
}
struct double2 {
    double x, y;
};
inline double2 make_double2(double x, double y) {
    return {x, y};
}

inline float __int_as_float(int v) {
    return std::bit_cast<float>(v);
}
inline float __uint_as_float(unsigned v) {
    return std::bit_cast<float>(v);
}
inline int __float_as_int(float v) {
    return std::bit_cast<int>(v);
}
inline double __longlong_as_double(long long v) {
    return std::bit_cast<double>(v);
}
inline float __fadd_rn(float a, float b) {
    return a + b;
}
inline float __fsub_rn(float a, float b) {
    return a - b;
}
inline float __fmul_rn(float a, float b) {
    return a * b;
}
inline float __fdiv_rn(float a, float b) {
    return a / b;
}
inline float __fdividef(float a, float b) {
    return a / b;
}
inline double __dadd_rn(double a, double b) {
    return a + b;
}
inline double __dsub_rn(double a, double b) {
    return a - b;
}
inline double __dmul_rn(double a, double b) {
    return a * b;
}
inline double __ddiv_rn(double a, double b) {
    return a / b;
}
// Thrown by what one thread at a time cannot do; the test reports the kernel as not emulated.
struct cx_not_emulated : std::runtime_error {
    using std::runtime_error::runtime_error;
};
[[noreturn]] inline void __syncthreads() {
    throw cx_not_emulated("__syncthreads");
}
template <class T> [[noreturn]] T __shfl_sync(unsigned, T, int, int = 32) {
    throw cx_not_emulated("__shfl_sync");
}
template <class T> [[noreturn]] T __shfl_xor_sync(unsigned, T, int, int = 32) {
    throw cx_not_emulated("__shfl_xor_sync");
}

// Calls kernel f with args[i] as its i-th (pointer) parameter.
template <class... P, std::size_t... I>
void cx_emulation_apply(void (*f)(P...), void* const* args, std::index_sequence<I...>) {
    f(static_cast<P>(args[I])...);
}
template <class... P> void cx_emulation_call(void (*f)(P...), void* const* args) {
    cx_emulation_apply(f, args, std::index_sequence_for<P...>{});
}

inline float cx_host_f16_to_float(unsigned short h) {
    return conflux::float16::to_float(h);
}
inline unsigned short cx_host_float_to_f16(float f) {
    return conflux::float16::from_float(f);
}
inline unsigned short cx_host_float_to_bf16(float f) {
    return conflux::bfloat16::from_float(f);
}
