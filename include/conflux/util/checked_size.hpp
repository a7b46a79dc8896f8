// One checked arithmetic for sizes: element counts, byte sizes, strides, pads and index ranges.
// Every size that comes from a model, an option or a file is computed through these functions,
// so a value that would wrap is a user error instead of a small wrong number.
//
// The bound: no tensor has more than max_tensor_elements elements (2^48) nor a buffer larger
// than max_tensor_bytes (2^51). That is far above any GPU's memory, and low enough that every
// offset, stride product and byte count computed from bounded sizes fits in a signed 64-bit
// integer with room to spare; the GPU kernels' choice between 32- and 64-bit index arithmetic
// (fits_index32) is derived from the same numbers.
#pragma once

#include "conflux/util/errors.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace conflux {

inline constexpr std::size_t max_tensor_elements = std::size_t{1} << 48;
inline constexpr std::size_t max_tensor_bytes = std::size_t{1} << 51;
// "2^48": how the bound reads in error messages.
inline constexpr const char* max_tensor_elements_text = "2^48";

// a + b and a * b, or nullopt when the result exceeds `limit`.
inline std::optional<std::size_t> add_size(std::size_t a, std::size_t b,
                                           std::size_t limit = max_tensor_elements) {
    std::size_t r = 0;
    if (__builtin_add_overflow(a, b, &r) || r > limit) return std::nullopt;
    return r;
}
inline std::optional<std::size_t> mul_size(std::size_t a, std::size_t b,
                                           std::size_t limit = max_tensor_elements) {
    std::size_t r = 0;
    if (__builtin_mul_overflow(a, b, &r) || r > limit) return std::nullopt;
    return r;
}

// Signed arithmetic on attribute values (pads, starts, steps): nullopt on overflow of int64.
inline std::optional<std::int64_t> add_i64(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}
inline std::optional<std::int64_t> sub_i64(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
    return r;
}
inline std::optional<std::int64_t> mul_i64(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}

// The product of `lens`, or nullopt past `limit`. Zero-length axes count as 1, because the
// standard strides of the other axes are products of the lens all the same (a [0, 2^62] shape
// holds no element but its first stride would still wrap).
inline std::optional<std::size_t> bounded_extent(const std::vector<std::size_t>& lens,
                                                 std::size_t limit = max_tensor_elements) {
    std::size_t n = 1;
    for (auto len : lens) {
        auto next = mul_size(n, len == 0 ? 1 : len, limit);
        if (!next) return std::nullopt;
        n = *next;
    }
    return n;
}

// The element count of `lens`; a user error naming `what` when it is past the bound.
std::size_t checked_elements(const std::vector<std::size_t>& lens, const std::string& what);

// A dimension-like value read from a model or an option (a len, a pad, a repeat count): a user
// error naming `what` when it is negative or larger than the bound.
std::size_t checked_dim(std::int64_t value, const std::string& what);

// Whether every offset into a buffer of `element_space` elements (and one past it) fits in a
// signed 32-bit index, as the generated kernels' fast path assumes.
inline bool fits_index32(std::size_t element_space) {
    return element_space < (std::size_t{1} << 31);
}

} // namespace conflux
