// Storage and compute types of generated kernels. Every dtype has a storage type (what a buffer
// holds) and a compute type (what arithmetic uses), the same pairs as the reference target:
// f16/bf16/f32 compute in float, f64 in double, every integer type and bool in long long.
// cx_load widens a stored element to its compute type; cx_store narrows it back, with the
// reference target's rules (round to nearest even; float to integer truncates, NaN gives 0,
// out-of-range saturates to the i64 range and then wraps to the storage width).
#pragma once

struct cx_f16 {
    unsigned short bits;
};
struct cx_bf16 {
    unsigned short bits;
};

template <class S> struct cx_compute { typedef long long type; };
template <> struct cx_compute<float> { typedef float type; };
template <> struct cx_compute<cx_f16> { typedef float type; };
template <> struct cx_compute<cx_bf16> { typedef float type; };
template <> struct cx_compute<double> { typedef double type; };

#ifdef CX_HOST_EMULATION
// tests/unit/cuda_kernel_emulation_test.cpp runs generated kernels whose threads are independent
// on the host (tests/unit/kernel_emulation_shim.hpp defines the cx_host_* conversions, with the
// reference target's rounding); a GPU runs the PTX below.
__device__ __forceinline__ float cx_f16_to_float(unsigned short h) {
    return cx_host_f16_to_float(h);
}
__device__ __forceinline__ unsigned short cx_float_to_f16(float f) {
    return cx_host_float_to_f16(f);
}
__device__ __forceinline__ float cx_bf16_to_float(unsigned short b) {
    return __uint_as_float(static_cast<unsigned>(b) << 16);
}
__device__ __forceinline__ unsigned short cx_float_to_bf16(float f) {
    return cx_host_float_to_bf16(f);
}
__device__ __forceinline__ float cx_ex2_approx(float x) {
    return exp2f(x);
}
__device__ __forceinline__ float cx_ex2_approx_keep_subnormals(float x) {
    return exp2f(x);
}
#else
__device__ __forceinline__ float cx_f16_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ unsigned short cx_float_to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ float cx_bf16_to_float(unsigned short b) {
    return __uint_as_float(static_cast<unsigned>(b) << 16);
}
__device__ __forceinline__ unsigned short cx_float_to_bf16(float f) {
    unsigned short b;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
    return b;
}

// 2^x in one MUFU.EX2 (exp2f adds a denormal range fix around it), for results rounded to f16
// next (attention's probabilities), where flushing below 2^-126 loses nothing.
__device__ __forceinline__ float cx_ex2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
// The same without .ftz: a result below f32's normal range stays a subnormal, which bf16 (f32's
// exponent range) can hold; the negative tail of GELU in f16/bf16 reaches it.
__device__ __forceinline__ float cx_ex2_approx_keep_subnormals(float x) {
    float y;
    asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
#endif

// Conversions between compute types (float, double, long long) and bool.
template <class To, class From> __device__ __forceinline__ To cx_cast(From v) {
    return static_cast<To>(v);
}
template <> __device__ __forceinline__ long long cx_cast<long long, float>(float v) {
    return v != v ? 0LL : static_cast<long long>(v); // cvt.rzi saturates on the device
}
template <> __device__ __forceinline__ long long cx_cast<long long, double>(double v) {
    return v != v ? 0LL : static_cast<long long>(v);
}
template <> __device__ __forceinline__ bool cx_cast<bool, float>(float v) {
    return v != 0.0f;
}
template <> __device__ __forceinline__ bool cx_cast<bool, double>(double v) {
    return v != 0.0;
}
template <> __device__ __forceinline__ bool cx_cast<bool, long long>(long long v) {
    return v != 0;
}

// N elements moved as one load or store (16 bytes for 8 f16 or 4 f32): the kernels that use it
// check that the address is a multiple of its size.
#ifdef CX_HOST_EMULATION
// The host emulation checks what the GPU requires of a vector access: an address aligned to
// its size (x86 would load it from anywhere).
template <class T, int N> struct alignas(sizeof(T) * N) cx_packed {
    T v[N];
    cx_packed() = default;
    cx_packed(const cx_packed& o) {
        cx_host_check_aligned(&o, sizeof(T) * N);
        for (int i = 0; i < N; ++i)
            v[i] = o.v[i];
    }
    cx_packed& operator=(const cx_packed& o) {
        cx_host_check_aligned(this, sizeof(T) * N);
        for (int i = 0; i < N; ++i)
            v[i] = o.v[i];
        return *this;
    }
};
#else
template <class T, int N> struct alignas(sizeof(T) * N) cx_packed { T v[N]; };
#endif

template <class S> __device__ __forceinline__ typename cx_compute<S>::type cx_load(const S* p) {
    return static_cast<typename cx_compute<S>::type>(*p);
}
template <> __device__ __forceinline__ float cx_load<cx_f16>(const cx_f16* p) {
    return cx_f16_to_float(p->bits);
}
template <> __device__ __forceinline__ float cx_load<cx_bf16>(const cx_bf16* p) {
    return cx_bf16_to_float(p->bits);
}
template <> __device__ __forceinline__ long long cx_load<bool>(const bool* p) {
    return *p ? 1LL : 0LL;
}

template <class S, class C> __device__ __forceinline__ void cx_store(S* p, C v) {
    *p = static_cast<S>(cx_cast<long long>(v)); // integer storage: through i64, then wrap
}
template <class C> __device__ __forceinline__ void cx_store(float* p, C v) {
    *p = static_cast<float>(v);
}
template <class C> __device__ __forceinline__ void cx_store(double* p, C v) {
    *p = static_cast<double>(v);
}
template <class C> __device__ __forceinline__ void cx_store(cx_f16* p, C v) {
    p->bits = cx_float_to_f16(static_cast<float>(v));
}
template <class C> __device__ __forceinline__ void cx_store(cx_bf16* p, C v) {
    p->bits = cx_float_to_bf16(static_cast<float>(v));
}
template <class C> __device__ __forceinline__ void cx_store(bool* p, C v) {
    *p = cx_cast<bool>(v);
}
template <> __device__ __forceinline__ void cx_store<bool, bool>(bool* p, bool v) {
    *p = v;
}

// Two adjacent elements p[0], p[1] in one store, p aligned to the pair: the GEMM epilogue's
// staging writes accumulator pairs this way (half the shared-memory stores, and one f16x2
// conversion instead of two).
template <class S, class C> __device__ __forceinline__ void cx_store_pair(S* p, C v0, C v1) {
    cx_store(p, v0);
    cx_store(p + 1, v1);
}
template <>
__device__ __forceinline__ void cx_store_pair<float, float>(float* p, float v0, float v1) {
    *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
}
template <>
__device__ __forceinline__ void cx_store_pair<cx_f16, float>(cx_f16* p, float v0, float v1) {
    unsigned packed;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(v1), "f"(v0)); // v1 in the high half
    *reinterpret_cast<unsigned*>(p) = packed;
}
template <>
__device__ __forceinline__ void cx_store_pair<cx_bf16, float>(cx_bf16* p, float v0, float v1) {
    unsigned packed;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(v1), "f"(v0));
    *reinterpret_cast<unsigned*>(p) = packed;
}
