// Device arithmetic for generated kernels, the reference target's semantics exactly
// (src/ops/elementwise.cpp): each function has overloads for the three compute types (float,
// double, long long) and computes what the reference computes, in the same order:
// - integers wrap on add/sub/mul/neg (through unsigned), x/0 and x%0 give 0, x/-1 wraps;
// - add/sub/mul/div go through the *_rn intrinsics, so the compiler never contracts a multiply
//   and an add into one fma (the reference rounds each operation);
// - floating-point functions on integers go through double and truncate back (cx_cast);
// - NaN behaviour (max/min propagate the first operand's NaN, sign keeps NaN, clip keeps NaN)
//   follows the reference's comparisons.
// Values are stored narrowed (cx_narrow) between operations, as the reference stores every
// intermediate in its dtype; cx_widen reads a stored value in its compute type.
#pragma once

#include "conflux/types.cuh"

// ---- storage <-> compute -------------------------------------------------------------------

__device__ __forceinline__ float cx_widen(float v) {
    return v;
}
__device__ __forceinline__ float cx_widen(cx_f16 v) {
    return cx_f16_to_float(v.bits);
}
__device__ __forceinline__ float cx_widen(cx_bf16 v) {
    return cx_bf16_to_float(v.bits);
}
__device__ __forceinline__ double cx_widen(double v) {
    return v;
}
__device__ __forceinline__ long long cx_widen(signed char v) {
    return v;
}
__device__ __forceinline__ long long cx_widen(unsigned char v) {
    return v;
}
__device__ __forceinline__ long long cx_widen(int v) {
    return v;
}
__device__ __forceinline__ long long cx_widen(long long v) {
    return v;
}
__device__ __forceinline__ long long cx_widen(bool v) {
    return v ? 1LL : 0LL;
}

// The storage value cx_store would write.
template <class S, class C> __device__ __forceinline__ S cx_narrow(C v) {
    S s;
    cx_store(&s, v);
    return s;
}

__device__ __forceinline__ bool cx_isnan(float x) {
    return x != x;
}
__device__ __forceinline__ bool cx_isnan(double x) {
    return x != x;
}
__device__ __forceinline__ bool cx_isnan(long long) {
    return false;
}

// ---- wrapping, unfused arithmetic ----------------------------------------------------------

__device__ __forceinline__ float cx_add(float a, float b) {
    return __fadd_rn(a, b);
}
__device__ __forceinline__ double cx_add(double a, double b) {
    return __dadd_rn(a, b);
}
__device__ __forceinline__ long long cx_add(long long a, long long b) {
    return static_cast<long long>(static_cast<unsigned long long>(a) +
                                  static_cast<unsigned long long>(b));
}
__device__ __forceinline__ float cx_sub(float a, float b) {
    return __fsub_rn(a, b);
}
__device__ __forceinline__ double cx_sub(double a, double b) {
    return __dsub_rn(a, b);
}
__device__ __forceinline__ long long cx_sub(long long a, long long b) {
    return static_cast<long long>(static_cast<unsigned long long>(a) -
                                  static_cast<unsigned long long>(b));
}
__device__ __forceinline__ float cx_mul(float a, float b) {
    return __fmul_rn(a, b);
}
__device__ __forceinline__ double cx_mul(double a, double b) {
    return __dmul_rn(a, b);
}
__device__ __forceinline__ long long cx_mul(long long a, long long b) {
    return static_cast<long long>(static_cast<unsigned long long>(a) *
                                  static_cast<unsigned long long>(b));
}
__device__ __forceinline__ float cx_div(float a, float b) {
    return __fdiv_rn(a, b);
}
__device__ __forceinline__ double cx_div(double a, double b) {
    return __ddiv_rn(a, b);
}
__device__ __forceinline__ long long cx_div(long long a, long long b) {
    if (b == 0) return 0;               // defined, as the reference defines it
    if (b == -1) return cx_sub(0LL, a); // INT64_MIN / -1 wraps instead of trapping
    return a / b;
}
// 0 - x, not -x: the reference's neg gives +0 for both zeros.
template <class C> __device__ __forceinline__ C cx_neg(C x) {
    return cx_sub(C(0), x);
}
template <class C> __device__ __forceinline__ C cx_abs(C x) {
    return x < 0 ? cx_neg(x) : x;
}

__device__ __forceinline__ float cx_pow(float a, float b) {
    return powf(a, b);
}
__device__ __forceinline__ double cx_pow(double a, double b) {
    return pow(a, b);
}
__device__ __forceinline__ long long cx_pow(long long a, long long b) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? -1 : 1;
        return 0; // 1 / a^|b| truncates to zero
    }
    unsigned long long result = 1, base = static_cast<unsigned long long>(a);
    for (unsigned long long e = static_cast<unsigned long long>(b); e != 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
    }
    return static_cast<long long>(result);
}

template <class C> __device__ __forceinline__ C cx_max(C a, C b) {
    return (a > b || cx_isnan(a)) ? a : b;
}
template <class C> __device__ __forceinline__ C cx_min(C a, C b) {
    return (a < b || cx_isnan(a)) ? a : b;
}

// c_fmod: C's fmod (sign of the dividend); otherwise the sign of the divisor (ONNX fmod=0).
template <class C> __device__ __forceinline__ C cx_mod_sign(C r, C b, bool c_fmod) {
    if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
__device__ __forceinline__ float cx_mod(float a, float b, bool c_fmod) {
    return cx_mod_sign(fmodf(a, b), b, c_fmod);
}
__device__ __forceinline__ double cx_mod(double a, double b, bool c_fmod) {
    return cx_mod_sign(fmod(a, b), b, c_fmod);
}
__device__ __forceinline__ long long cx_mod(long long a, long long b, bool c_fmod) {
    if (b == 0 || b == -1) return 0; // x%0 is defined here; INT64_MIN%-1 would trap
    return cx_mod_sign(a % b, b, c_fmod);
}

template <class C> __device__ __forceinline__ C cx_prelu(C x, C slope) {
    return x < 0 ? cx_mul(slope, x) : x;
}
// max then min, so lo > hi gives hi everywhere and NaN stays NaN.
template <class C> __device__ __forceinline__ C cx_clip(C x, C lo, C hi) {
    C y = x < lo ? lo : x;
    return y > hi ? hi : y;
}
template <class C> __device__ __forceinline__ C cx_relu(C x) {
    return x < 0 ? C(0) : x;
}
// alpha in the compute type (integers truncate it, as the reference does).
template <class C> __device__ __forceinline__ C cx_leaky_relu(C x, C alpha) {
    return x < 0 ? cx_mul(alpha, x) : x;
}
template <class C> __device__ __forceinline__ C cx_thresholded_relu(C x, C alpha) {
    return x > alpha ? x : C(0);
}
template <class C> __device__ __forceinline__ C cx_sign(C x) {
    if (x > 0) return C(1);
    if (x < 0) return C(-1);
    return x == 0 ? C(0) : x; // NaN stays NaN
}
__device__ __forceinline__ bool cx_isinf(float x, bool pos, bool neg) {
    return fabsf(x) == __int_as_float(0x7f800000) && (x > 0 ? pos : neg);
}
__device__ __forceinline__ bool cx_isinf(double x, bool pos, bool neg) {
    return fabs(x) == __longlong_as_double(0x7ff0000000000000LL) && (x > 0 ? pos : neg);
}
__device__ __forceinline__ bool cx_isinf(long long, bool, bool) {
    return false;
}

// ---- floating-point functions (integers through double) ------------------------------------

#define CX_FLOAT_FUNCTION(name, float_fn, double_fn)                                               \
    __device__ __forceinline__ float name(float x) {                                               \
        return float_fn(x);                                                                        \
    }                                                                                              \
    __device__ __forceinline__ double name(double x) {                                             \
        return double_fn(x);                                                                       \
    }                                                                                              \
    __device__ __forceinline__ long long name(long long x) {                                       \
        return cx_cast<long long>(double_fn(static_cast<double>(x)));                              \
    }

CX_FLOAT_FUNCTION(cx_exp, expf, exp)
CX_FLOAT_FUNCTION(cx_log, logf, log)
CX_FLOAT_FUNCTION(cx_sqrt, sqrtf, sqrt)
CX_FLOAT_FUNCTION(cx_erf, erff, erf)
CX_FLOAT_FUNCTION(cx_tanh, tanhf, tanh)
CX_FLOAT_FUNCTION(cx_sin, sinf, sin)
CX_FLOAT_FUNCTION(cx_cos, cosf, cos)
CX_FLOAT_FUNCTION(cx_tan, tanf, tan)
CX_FLOAT_FUNCTION(cx_asin, asinf, asin)
CX_FLOAT_FUNCTION(cx_acos, acosf, acos)
CX_FLOAT_FUNCTION(cx_atan, atanf, atan)
CX_FLOAT_FUNCTION(cx_sinh, sinhf, sinh)
CX_FLOAT_FUNCTION(cx_cosh, coshf, cosh)
CX_FLOAT_FUNCTION(cx_asinh, asinhf, asinh)
CX_FLOAT_FUNCTION(cx_acosh, acoshf, acosh)
CX_FLOAT_FUNCTION(cx_atanh, atanhf, atanh)
CX_FLOAT_FUNCTION(cx_expm1, expm1f, expm1)
CX_FLOAT_FUNCTION(cx_log1p, log1pf, log1p)

#undef CX_FLOAT_FUNCTION

// GELU in one piece: the exporters' five-op chain rounds to the storage type after each op and
// reads its input twice; tanh_approx selects 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
__device__ __forceinline__ float cx_gelu(float x, bool tanh_approx) {
    if (tanh_approx) return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    return 0.5f * x * (1.0f + erff(x * 0.7071067812f));
}
// 1 / x in one MUFU.RCP, for results rounded to 16 bits next.
__device__ __forceinline__ float cx_rcp_approx(float x) {
#ifdef CX_HOST_EMULATION
    return 1.0f / x; // tests/unit/kernel_emulation_shim.hpp
#else
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#endif
}
// GELU for an op whose result is rounded to f16 or bf16 next (11 or 8 significant bits). In a
// GEMM epilogue erff and tanhf are most of the instructions per element (ViT-B/16's FFN-up at
// batch 32: 0.105 ms with bias and GELU, 0.064 ms bare, on an H200); these forms are within 4e-6 of
// exact GELU (2e-5 in the far negative tail, below f16's range), so the rounding hides the
// difference, and neither cancels for negative x (1 + erf(x) does):
//   tanh form: 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3);
//   erf form: x Phi(x) with Phi(-|x|) = erfc(z) / 2, z = |x| / sqrt(2), and
//   erfc(z) / 2 = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), P a quintic fitted (Chebyshev, then
//   reweighted toward minimax) to ln(erfc(z) / (2t)) + z^2 for z in [0, 10]; past x = -13 the
//   result is a bf16 subnormal (kept: the ex2 does not flush) and past -14 below bf16's range.
//   P is scaled by log2(e) here, so one ex2 gives the exponential.
__device__ __forceinline__ float cx_gelu_rounded_to_16(float x, bool tanh_approx) {
    if (tanh_approx) {
        // e = -2u log2(e) (the constants: -2 sqrt(2/pi) log2(e), and that times 0.044715), so
        // the result is x / (1 + 2^e). For x < 0, 2^e overflows past x = -9.5 while the result
        // is still a normal bf16, so that side computes x 2^-e / (1 + 2^-e) instead.
        const float e = x * fmaf(-0.10294324f, x * x, -2.3022082f);
        const float q = cx_ex2_approx_keep_subnormals(-fabsf(e));
        const float r = x * cx_rcp_approx(1.0f + q);
        return x >= 0.0f ? r : r * q;
    }
    const float t = cx_rcp_approx(fmaf(0.35355339f, fabsf(x), 1.0f)); // 1 + |x| / (2 sqrt 2)
    float p = 0.33007824f;
    p = fmaf(p, t, -1.0231572f);
    p = fmaf(p, t, 0.68456203f);
    p = fmaf(p, t, 0.36707684f);
    p = fmaf(p, t, 1.4686849f);
    p = fmaf(p, t, -2.8272336f);
    const float half_erfc =
        t * cx_ex2_approx_keep_subnormals(fmaf(-0.72134752f * x, x, p)); // -x^2/2 log2(e)
    return x * (x >= 0.0f ? 1.0f - half_erfc : half_erfc);
}
__device__ __forceinline__ double cx_gelu(double x, bool tanh_approx) {
    if (tanh_approx) return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
}
__device__ __forceinline__ long long cx_gelu(long long x, bool tanh_approx) {
    return cx_cast<long long>(cx_gelu(static_cast<double>(x), tanh_approx));
}

// Floor and ceil leave integers alone; the floating forms are exact.
__device__ __forceinline__ float cx_floor(float x) {
    return floorf(x);
}
__device__ __forceinline__ double cx_floor(double x) {
    return floor(x);
}
__device__ __forceinline__ long long cx_floor(long long x) {
    return x;
}
__device__ __forceinline__ float cx_ceil(float x) {
    return ceilf(x);
}
__device__ __forceinline__ double cx_ceil(double x) {
    return ceil(x);
}
__device__ __forceinline__ long long cx_ceil(long long x) {
    return x;
}

// Half to even, by the reference's explicit steps (which also fix the sign of a zero result).
template <class T> __device__ __forceinline__ T cx_round_t(T x) {
    const T f = cx_floor(x);
    const T d = cx_sub(x, f);
    if (d < T(0.5)) return f;
    if (d > T(0.5)) return cx_add(f, T(1));
    return cx_mod(f, T(2), true) == 0 ? f : cx_add(f, T(1));
}
__device__ __forceinline__ float cx_round(float x) {
    return cx_round_t(x);
}
__device__ __forceinline__ double cx_round(double x) {
    return cx_round_t(x);
}
__device__ __forceinline__ long long cx_round(long long x) {
    return x;
}

// The activations below compute in T = float or double; the long long forms go through double
// with the attribute as double, as the reference's fmath does.
#define CX_THROUGH_DOUBLE_1(name)                                                                  \
    __device__ __forceinline__ float name(float x) {                                               \
        return name##_t(x);                                                                        \
    }                                                                                              \
    __device__ __forceinline__ double name(double x) {                                             \
        return name##_t(x);                                                                        \
    }                                                                                              \
    __device__ __forceinline__ long long name(long long x) {                                       \
        return cx_cast<long long>(name##_t(static_cast<double>(x)));                               \
    }
#define CX_THROUGH_DOUBLE_2(name)                                                                  \
    __device__ __forceinline__ float name(float x, float a) {                                      \
        return name##_t(x, a);                                                                     \
    }                                                                                              \
    __device__ __forceinline__ double name(double x, double a) {                                   \
        return name##_t(x, a);                                                                     \
    }                                                                                              \
    __device__ __forceinline__ long long name(long long x, double a) {                             \
        return cx_cast<long long>(name##_t(static_cast<double>(x), a));                            \
    }
#define CX_THROUGH_DOUBLE_3(name)                                                                  \
    __device__ __forceinline__ float name(float x, float a, float b) {                             \
        return name##_t(x, a, b);                                                                  \
    }                                                                                              \
    __device__ __forceinline__ double name(double x, double a, double b) {                         \
        return name##_t(x, a, b);                                                                  \
    }                                                                                              \
    __device__ __forceinline__ long long name(long long x, double a, double b) {                   \
        return cx_cast<long long>(name##_t(static_cast<double>(x), a, b));                         \
    }

template <class T> __device__ __forceinline__ T cx_reciprocal_t(T v) {
    return cx_div(T(1), v);
}
// exp of a non-positive argument only, so neither branch overflows.
template <class T> __device__ __forceinline__ T cx_sigmoid_t(T v) {
    if (v >= 0) return cx_div(T(1), cx_add(T(1), cx_exp(cx_neg(v))));
    const T ev = cx_exp(v);
    return cx_div(ev, cx_add(T(1), ev));
}
template <class T> __device__ __forceinline__ T cx_elu_t(T v, T a) {
    return v < 0 ? cx_mul(a, cx_expm1(v)) : v;
}
template <class T> __device__ __forceinline__ T cx_selu_t(T v, T a, T g) {
    return v > 0 ? cx_mul(g, v) : cx_mul(g, cx_sub(cx_mul(a, cx_exp(v)), a));
}
template <class T> __device__ __forceinline__ T cx_celu_t(T v, T a) {
    return v > 0 ? v : cx_mul(a, cx_expm1(cx_div(v, a)));
}
// std::clamp(v, 0, 1): NaN passes through.
template <class T> __device__ __forceinline__ T cx_clamp01(T v) {
    return v < T(0) ? T(0) : (T(1) < v ? T(1) : v);
}
template <class T> __device__ __forceinline__ T cx_hard_sigmoid_t(T v, T a, T b) {
    return cx_clamp01(cx_add(cx_mul(a, v), b));
}
template <class T> __device__ __forceinline__ T cx_hard_swish_t(T v) {
    return cx_mul(v, cx_clamp01(cx_add(cx_mul(v, cx_div(T(1), T(6))), T(0.5))));
}
// log(1 + e^v) without overflowing e^v for large v.
template <class T> __device__ __forceinline__ T cx_softplus_t(T v) {
    return v > 0 ? cx_add(v, cx_log1p(cx_exp(cx_neg(v)))) : cx_log1p(cx_exp(v));
}
__device__ __forceinline__ float cx_fabs(float v) {
    return fabsf(v);
}
__device__ __forceinline__ double cx_fabs(double v) {
    return fabs(v);
}
template <class T> __device__ __forceinline__ T cx_softsign_t(T v) {
    return cx_div(v, cx_add(T(1), cx_fabs(v)));
}

CX_THROUGH_DOUBLE_1(cx_reciprocal)
// f32 without a branch: the epilogues of SiLU networks call it on every element, and the two
// branches above, each with an IEEE division's range check and slow path, diverged within a
// warp (EfficientNet's expand convolutions ran at a third of their bias-only speed). exp(-x)
// overflows to inf below x = -88.7 and the reciprocal of inf is 0, as the exact value rounds
// to in f32 (up to subnormals); the approximate reciprocal's error is 1 ulp of a value >= 1.
__device__ __forceinline__ float cx_sigmoid(float x) {
    return __fdividef(1.0f, 1.0f + expf(-x));
}
__device__ __forceinline__ double cx_sigmoid(double x) {
    return cx_sigmoid_t(x);
}
__device__ __forceinline__ long long cx_sigmoid(long long x) {
    return cx_cast<long long>(cx_sigmoid_t(static_cast<double>(x)));
}
CX_THROUGH_DOUBLE_2(cx_elu)
CX_THROUGH_DOUBLE_3(cx_selu)
CX_THROUGH_DOUBLE_2(cx_celu)
CX_THROUGH_DOUBLE_3(cx_hard_sigmoid)
CX_THROUGH_DOUBLE_1(cx_hard_swish)
CX_THROUGH_DOUBLE_1(cx_softplus)
CX_THROUGH_DOUBLE_1(cx_softsign)

#undef CX_THROUGH_DOUBLE_1
#undef CX_THROUGH_DOUBLE_2
#undef CX_THROUGH_DOUBLE_3

// ---- index helpers -------------------------------------------------------------------------

// Set to 1 by any thread that reads a gather index outside [-n, n); the host reads it after
// a run and reports the run as failed (executable::check_index_errors). One per module: the
// host looks it up by this name in every kernel that calls cx_gather_index.
__device__ unsigned int cx_index_out_of_range;

// A gather index read from memory: negative values count from the end. An index outside
// [-n, n) is a user error, as in the reference: it raises cx_index_out_of_range and, so that
// the read stays in bounds until the host sees the flag, is clamped into [0, n).
__device__ __forceinline__ long long cx_gather_index(long long k, long long n) {
    if (k < -n || k >= n) cx_index_out_of_range = 1u;
    if (k < 0) k += n;
    return k < 0 ? 0 : (k >= n ? n - 1 : k);
}
// Pad's source index for position i (may be outside [0, n)): reflect mirrors without repeating
// the border and is periodic with period 2(n-1); edge clamps. n > 0.
template <class I> __device__ __forceinline__ I cx_reflect_index(I i, I n) {
    if (n == 1) return 0;
    const I period = 2 * (n - 1);
    const I m = ((i % period) + period) % period;
    return m < n ? m : period - m;
}
template <class I> __device__ __forceinline__ I cx_edge_index(I i, I n) {
    return i < 0 ? I(0) : (i >= n ? n - 1 : i);
}
