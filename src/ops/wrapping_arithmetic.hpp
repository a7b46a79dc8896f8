// Integer arithmetic that wraps around (two's complement, like the storage types and the CUDA
// kernels) instead of being undefined on overflow: the arithmetic is done in std::uint64_t, where
// C++ defines wrap-around, and converted back. Floating-point types use the plain operators.
// Private to src/ops: the elementwise ops and the reductions evaluate with it.
#pragma once

#include <cstdint>
#include <type_traits>

namespace conflux::op {

template <class C> C wrap_add(C a, C b) {
    if constexpr (std::is_integral_v<C>)
        return C(std::uint64_t(a) + std::uint64_t(b));
    else
        return a + b;
}

template <class C> C wrap_sub(C a, C b) {
    if constexpr (std::is_integral_v<C>)
        return C(std::uint64_t(a) - std::uint64_t(b));
    else
        return a - b;
}

template <class C> C wrap_mul(C a, C b) {
    if constexpr (std::is_integral_v<C>)
        return C(std::uint64_t(a) * std::uint64_t(b));
    else
        return a * b;
}

// -a; the most negative integer is its own negation.
template <class C> C wrap_neg(C a) {
    return wrap_sub(C(0), a);
}

} // namespace conflux::op
