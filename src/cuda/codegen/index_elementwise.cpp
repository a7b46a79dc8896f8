#include "cuda/codegen/index_elementwise.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"

#include <cmath>

namespace conflux::cuda::index {

namespace {

bool integral_compute(dtype t) {
    return compute_type(t) == "long long";
}

// An attribute as the compute type C, as the reference converts it (convert_value: integers
// truncate, saturating out of range, NaN is 0).
std::string in_compute_type(dtype t, float v) {
    if (!integral_compute(t)) return compute_literal(t, static_cast<double>(v));
    return text::long_long_literal(convert_value<long long>(v));
}

// An attribute as the type the reference's fmath computes in: float for f32/f16/bf16, double
// for f64 and every integer type.
std::string in_function_type(dtype t, float v) {
    return compute_literal(compute_type(t) == "float" ? dtype::f32 : dtype::f64,
                           static_cast<double>(v));
}

std::string call(const std::string& fn, const std::vector<std::string>& args) {
    std::string text = fn + "(";
    for (std::size_t i = 0; i < args.size(); ++i)
        text += (i ? ", " : "") + args[i];
    return text + ")";
}

std::string infix(const std::string& a, const char* op, const std::string& b) {
    return "(" + a + " " + op + " " + b + ")";
}

} // namespace

std::string elementwise_expression(const op::elementwise& e, dtype value_type,
                                   const std::vector<std::string>& args) {
    using enum op::elementwise_kind;
    CONFLUX_ASSERT(args.size() == op::arity(e.kind), "elementwise ", e.name(), " given ",
                   args.size(), " arguments");
    const std::string kind(op::to_string(e.kind));
    const auto& a = args[0];
    switch (e.kind) {
    case add:
    case sub:
    case mul:
    case div:
    case pow:
    case max:
    case min:
    case prelu:
    case clip:
    case neg:
    case abs:
    case exp:
    case log:
    case sqrt:
    case reciprocal:
    case erf:
    case tanh:
    case sigmoid:
    case relu:
    case hard_swish:
    case softplus:
    case softsign:
    case floor:
    case ceil:
    case round:
    case sign:
    case sin:
    case cos:
    case tan:
    case asin:
    case acos:
    case atan:
    case sinh:
    case cosh:
    case asinh:
    case acosh:
    case atanh:
        return call("cx_" + kind, args);
    case gelu:
        // A result rounded to 16 bits next does not need erff's or tanhf's last bits.
        return call(value_type == dtype::f16 || value_type == dtype::bf16 ? "cx_gelu_rounded_to_16"
                                                                          : "cx_gelu",
                    {a, e.alpha != 0 ? "true" : "false"});
    case mod:
        return call("cx_mod", {a, args[1], e.alpha != 0 ? "true" : "false"});
    case equal:
        return infix(a, "==", args[1]);
    case greater:
        return infix(a, ">", args[1]);
    case greater_equal:
        return infix(a, ">=", args[1]);
    case less:
        return infix(a, "<", args[1]);
    case less_equal:
        return infix(a, "<=", args[1]);
    case logical_and:
        return "(" + a + " != 0 && " + args[1] + " != 0)";
    case logical_or:
        return "(" + a + " != 0 || " + args[1] + " != 0)";
    case logical_xor:
        return "((" + a + " != 0) != (" + args[1] + " != 0))";
    case logical_not:
        return "(" + a + " == 0)";
    case isnan:
        return call("cx_isnan", {a});
    case isinf:
        return call("cx_isinf",
                    {a, e.alpha != 0 ? "true" : "false", e.beta != 0 ? "true" : "false"});
    case leaky_relu:
    case thresholded_relu:
        return call("cx_" + kind, {a, in_compute_type(value_type, e.alpha)});
    case elu:
    case celu:
        return call("cx_" + kind, {a, in_function_type(value_type, e.alpha)});
    case selu:
    case hard_sigmoid:
        return call("cx_" + kind, {a, in_function_type(value_type, e.alpha),
                                   in_function_type(value_type, e.beta)});
    case convert:
        return a;
    case where:
        break;
    }
    throw_internal_error("elementwise_expression: no expression for ", kind);
}

} // namespace conflux::cuda::index
