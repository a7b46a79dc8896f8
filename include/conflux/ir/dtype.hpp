// Element types. The one table below drives the enum, names, sizes and the visitors, so adding a
// type is a one-line change.
#pragma once

#include "conflux/ir/half.hpp"
#include "conflux/util/errors.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace conflux {

// X(enum name, C++ storage type, printed name)
#define CONFLUX_DTYPES(X)                                                                          \
    X(f32, float, "f32")                                                                           \
    X(f16, ::conflux::float16, "f16")                                                              \
    X(bf16, ::conflux::bfloat16, "bf16")                                                           \
    X(f64, double, "f64")                                                                          \
    X(i8, std::int8_t, "i8")                                                                       \
    X(u8, std::uint8_t, "u8")                                                                      \
    X(i32, std::int32_t, "i32")                                                                    \
    X(i64, std::int64_t, "i64")                                                                    \
    X(boolean, bool, "bool")

enum class dtype : std::uint8_t {
#define CONFLUX_ENUM(e, t, n) e,
    CONFLUX_DTYPES(CONFLUX_ENUM)
#undef CONFLUX_ENUM
};

std::string_view to_string(dtype t);
std::optional<dtype> parse_dtype(std::string_view name);
std::size_t size_of(dtype t);
bool is_floating(dtype t);
bool is_integral(dtype t); // bool counts as integral

template <class T> struct dtype_tag { using type = T; };

// Calls f(dtype_tag<storage type>{}) for the storage type of t.
template <class F> decltype(auto) visit_storage(dtype t, F&& f) {
    switch (t) {
#define CONFLUX_CASE(e, ty, n)                                                                     \
    case dtype::e:                                                                                 \
        return f(dtype_tag<ty>{});
        CONFLUX_DTYPES(CONFLUX_CASE)
#undef CONFLUX_CASE
    }
    throw_internal_error("unknown dtype ", int(t));
}

// The type the reference target computes in: f32 for f32/f16/bf16 (then rounded back), f64 for
// f64, i64 for every integer type and bool.
template <class F> decltype(auto) visit_compute(dtype t, F&& f) {
    switch (t) {
    case dtype::f32:
    case dtype::f16:
    case dtype::bf16:
        return f(dtype_tag<float>{});
    case dtype::f64:
        return f(dtype_tag<double>{});
    default:
        return f(dtype_tag<std::int64_t>{});
    }
}

// Storage <-> compute conversions, saturating nothing: integer conversions wrap like C++.
template <class To, class From> To convert_value(From v) {
    if constexpr (std::is_same_v<To, From>) {
        return v;
    } else if constexpr (std::is_same_v<From, float16> || std::is_same_v<From, bfloat16>) {
        return convert_value<To>(static_cast<float>(v));
    } else if constexpr (std::is_same_v<To, float16> || std::is_same_v<To, bfloat16>) {
        return To(static_cast<float>(v));
    } else if constexpr (std::is_same_v<To, bool>) {
        return v != From(0);
    } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
        // Out-of-range float to int is undefined in C++; define it as truncation through i64.
        if (!(v == v)) return To(0);
        if (v >= 9.2233720368547758e18) return To(INT64_MAX);
        if (v <= -9.2233720368547758e18) return To(INT64_MIN);
        return To(static_cast<std::int64_t>(v));
    } else {
        return static_cast<To>(v);
    }
}

} // namespace conflux
