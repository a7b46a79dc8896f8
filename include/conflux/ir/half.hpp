// Storage types for the 16-bit floats. Arithmetic is never done in them: the reference target
// widens to float, computes, and rounds back (round to nearest even), which is what the GPU
// kernels do too.
#pragma once

#include <bit>
#include <cstdint>

namespace conflux {

struct float16 {
    std::uint16_t bits = 0;

    float16() = default;
    explicit float16(float f) : bits(from_float(f)) {}
    explicit operator float() const { return to_float(bits); }

    static std::uint16_t from_float(float f);
    static float to_float(std::uint16_t h);
};

struct bfloat16 {
    std::uint16_t bits = 0;

    bfloat16() = default;
    explicit bfloat16(float f) : bits(from_float(f)) {}
    explicit operator float() const { return std::bit_cast<float>(std::uint32_t(bits) << 16); }

    static std::uint16_t from_float(float f) {
        auto u = std::bit_cast<std::uint32_t>(f);
        if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40u); // quiet NaN
        u += 0x7fffu + ((u >> 16) & 1u);
        return std::uint16_t(u >> 16);
    }
};

inline float float16::to_float(std::uint16_t h) {
    std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1fu;
    std::uint32_t man = h & 0x3ffu;
    std::uint32_t u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else {
        // Subnormal half: value is man * 2^-24; a float represents it exactly.
        float v = float(man) * 0x1p-24f;
        u = sign | std::bit_cast<std::uint32_t>(v);
    }
    return std::bit_cast<float>(u);
}

inline std::uint16_t float16::from_float(float f) {
    auto u = std::bit_cast<std::uint32_t>(f);
    std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
    std::uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return std::uint16_t(sign | 0x7e00u);  // NaN
    if (abs >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u); // rounds to inf
    if (abs < 0x38800000u) {
        // Result is subnormal (or zero): scale so that the half's LSB is 1.0 and let the float
        // unit round to nearest even.
        float scaled = std::bit_cast<float>(abs) * 0x1p24f;
        auto m = std::uint32_t(scaled);
        float rem = scaled - float(m);
        if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
        return std::uint16_t(sign | m);
    }
    std::uint32_t exp = (abs >> 23) - 112u;
    std::uint32_t man = abs & 0x7fffffu;
    std::uint32_t h = (exp << 10) | (man >> 13);
    std::uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return std::uint16_t(sign | h);
}

} // namespace conflux
