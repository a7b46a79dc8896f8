#include "conflux/ir/dtype.hpp"

namespace conflux {

std::string_view to_string(dtype t) {
    switch (t) {
#define CONFLUX_CASE(e, ty, n)                                                                     \
    case dtype::e:                                                                                 \
        return n;
        CONFLUX_DTYPES(CONFLUX_CASE)
#undef CONFLUX_CASE
    }
    return "?";
}

std::optional<dtype> parse_dtype(std::string_view name) {
#define CONFLUX_CASE(e, ty, n)                                                                     \
    if (name == n) return dtype::e;
    CONFLUX_DTYPES(CONFLUX_CASE)
#undef CONFLUX_CASE
    return std::nullopt;
}

std::size_t size_of(dtype t) {
    return visit_storage(t, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

bool is_floating(dtype t) {
    return t == dtype::f32 || t == dtype::f16 || t == dtype::bf16 || t == dtype::f64;
}

bool is_integral(dtype t) {
    return !is_floating(t);
}

} // namespace conflux
