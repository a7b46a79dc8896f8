#include "cuda/codegen/device_types.hpp"

#include "cuda/codegen/codegen_text.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace conflux::cuda {

std::string storage_type(dtype t) {
    switch (t) {
    case dtype::f32:
        return "float";
    case dtype::f16:
        return "cx_f16";
    case dtype::bf16:
        return "cx_bf16";
    case dtype::f64:
        return "double";
    case dtype::i8:
        return "signed char";
    case dtype::u8:
        return "unsigned char";
    case dtype::i32:
        return "int";
    case dtype::i64:
        return "long long";
    case dtype::boolean:
        return "bool";
    }
    throw_internal_error("storage_type: unknown dtype ", int(t));
}

std::string compute_type(dtype t) {
    switch (t) {
    case dtype::f32:
    case dtype::f16:
    case dtype::bf16:
        return "float";
    case dtype::f64:
        return "double";
    default:
        return "long long";
    }
}

std::string compute_literal(dtype t, double v) {
    const std::string ct = compute_type(t);
    if (ct == "long long") return text::long_long_literal(static_cast<long long>(v));
    char buf[64];
    if (ct == "float") {
        const float f = static_cast<float>(v);
        if (!std::isfinite(f)) {
            std::snprintf(buf, sizeof buf, "__int_as_float(0x%08x)",
                          std::bit_cast<std::uint32_t>(f));
            return buf;
        }
        std::snprintf(buf, sizeof buf, "%af", static_cast<double>(f));
        return buf;
    }
    if (!std::isfinite(v)) {
        std::snprintf(buf, sizeof buf, "__longlong_as_double(0x%016llxLL)",
                      static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(v)));
        return buf;
    }
    std::snprintf(buf, sizeof buf, "%a", v);
    return buf;
}

} // namespace conflux::cuda
