// Elementwise ops: every input has the same lens (broadcasting is explicit, through `broadcast`
// views the importer inserts), any strides. The output keeps the axis order of input 0 when that
// input is packed (so an NHWC-ordered value stays NHWC), else it is standard.
// f16/bf16 compute in f32 and round; integer types compute in i64 and wrap to the output type.
#pragma once

#include "conflux/ir/operation.hpp"

#include <optional>
#include <string_view>

namespace conflux::op {

// X(kind, printed name, arity)
#define CONFLUX_ELEMENTWISE_KINDS(X)                                                               \
    X(add, "add", 2)                                                                               \
    X(sub, "sub", 2)                                                                               \
    X(mul, "mul", 2)                                                                               \
    X(div, "div", 2)                                                                               \
    X(pow, "pow", 2)                                                                               \
    X(max, "max", 2)                                                                               \
    X(min, "min", 2)                                                                               \
    X(mod, "mod", 2) /* alpha != 0: C fmod semantics; else sign of divisor (ONNX fmod=0) */        \
    X(prelu, "prelu", 2)                                                                           \
    X(equal, "equal", 2)                                                                           \
    X(greater, "greater", 2)                                                                       \
    X(greater_equal, "greater_equal", 2)                                                           \
    X(less, "less", 2)                                                                             \
    X(less_equal, "less_equal", 2)                                                                 \
    X(logical_and, "and", 2)                                                                       \
    X(logical_or, "or", 2)                                                                         \
    X(logical_xor, "xor", 2)                                                                       \
    X(where, "where", 3) /* where(cond, a, b) */                                                   \
    X(clip, "clip", 3)   /* clip(x, lo, hi) */                                                     \
    X(neg, "neg", 1)                                                                               \
    X(abs, "abs", 1)                                                                               \
    X(exp, "exp", 1)                                                                               \
    X(log, "log", 1)                                                                               \
    X(sqrt, "sqrt", 1)                                                                             \
    X(reciprocal, "reciprocal", 1)                                                                 \
    X(erf, "erf", 1)                                                                               \
    X(gelu, "gelu", 1) /* x/2 (1 + erf(x / sqrt 2)); alpha != 0: the tanh approximation */         \
    X(tanh, "tanh", 1)                                                                             \
    X(sigmoid, "sigmoid", 1)                                                                       \
    X(relu, "relu", 1)                                                                             \
    X(leaky_relu, "leaky_relu", 1)     /* alpha */                                                 \
    X(elu, "elu", 1)                   /* alpha */                                                 \
    X(selu, "selu", 1)                 /* alpha, beta = gamma */                                   \
    X(celu, "celu", 1)                 /* alpha */                                                 \
    X(hard_sigmoid, "hard_sigmoid", 1) /* alpha, beta */                                           \
    X(hard_swish, "hard_swish", 1)                                                                 \
    X(softplus, "softplus", 1)                                                                     \
    X(softsign, "softsign", 1)                                                                     \
    X(thresholded_relu, "thresholded_relu", 1) /* alpha */                                         \
    X(floor, "floor", 1)                                                                           \
    X(ceil, "ceil", 1)                                                                             \
    X(round, "round", 1) /* half to even */                                                        \
    X(sign, "sign", 1)                                                                             \
    X(logical_not, "not", 1)                                                                       \
    X(isnan, "isnan", 1)                                                                           \
    X(isinf, "isinf", 1) /* alpha: detect +inf, beta: detect -inf (1 or 0) */                      \
    X(sin, "sin", 1)                                                                               \
    X(cos, "cos", 1)                                                                               \
    X(tan, "tan", 1)                                                                               \
    X(asin, "asin", 1)                                                                             \
    X(acos, "acos", 1)                                                                             \
    X(atan, "atan", 1)                                                                             \
    X(sinh, "sinh", 1)                                                                             \
    X(cosh, "cosh", 1)                                                                             \
    X(asinh, "asinh", 1)                                                                           \
    X(acosh, "acosh", 1)                                                                           \
    X(atanh, "atanh", 1)                                                                           \
    X(convert, "convert", 1) /* to `target` */

enum class elementwise_kind {
#define CONFLUX_ENUM(k, n, a) k,
    CONFLUX_ELEMENTWISE_KINDS(CONFLUX_ENUM)
#undef CONFLUX_ENUM
};

// Every kind, in the table's order: each is an op of its own name.
inline constexpr elementwise_kind all_elementwise_kinds[] = {
#define CONFLUX_KIND(k, n, a) elementwise_kind::k,
    CONFLUX_ELEMENTWISE_KINDS(CONFLUX_KIND)
#undef CONFLUX_KIND
};

std::string_view to_string(elementwise_kind k);
std::optional<elementwise_kind> parse_elementwise_kind(std::string_view name);
std::size_t arity(elementwise_kind k);
// Comparisons and logical ops produce bool.
bool produces_bool(elementwise_kind k);

struct elementwise {
    elementwise_kind kind = elementwise_kind::add;
    float alpha = 0; // meaning per kind, see the table
    float beta = 0;
    dtype target = dtype::f32; // convert only

    std::string name() const { return std::string(to_string(kind)); }
    static elementwise from_attributes(elementwise_kind kind, const nlohmann::json& a);
    nlohmann::json attributes() const;
    op_traits traits() const { return {.pointwise = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const elementwise&) const = default;
};

inline elementwise make_elementwise(elementwise_kind k, float alpha = 0, float beta = 0) {
    return {k, alpha, beta, dtype::f32};
}
inline elementwise make_convert(dtype to) {
    return {elementwise_kind::convert, 0, 0, to};
}

// The output layout rule shared by every elementwise-like op (see the file comment).
shape elementwise_output_shape(const shape& first, dtype out_type);

} // namespace conflux::op
