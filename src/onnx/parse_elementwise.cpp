// Elementwise ONNX ops -> op::elementwise, with the multidirectional broadcasting made explicit
// (broadcast views) and the variadic ops (Sum, Mean, Max, Min) unrolled into chains.
#include "onnx/node_context.hpp"

#include "conflux/ops/views.hpp"

#include <cmath>

namespace conflux::onnx {

namespace {

using K = op::elementwise_kind;
using outputs = std::vector<instruction_ref>;

// The smallest / largest value of t, so a missing Clip bound never clips.
double lowest(dtype t) {
    return visit_storage(t, [](auto tag) -> double {
        using S = typename decltype(tag)::type;
        if constexpr (std::is_same_v<S, bool>) {
            return 0;
        } else if constexpr (std::is_integral_v<S>) {
            return double(std::numeric_limits<S>::lowest());
        } else {
            return -std::numeric_limits<double>::infinity();
        }
    });
}

double highest(dtype t) {
    return visit_storage(t, [](auto tag) -> double {
        using S = typename decltype(tag)::type;
        if constexpr (std::is_same_v<S, bool>) {
            return 1;
        } else if constexpr (std::is_integral_v<S>) {
            return double(std::numeric_limits<S>::max());
        } else {
            return std::numeric_limits<double>::infinity();
        }
    });
}

std::vector<instruction_ref> all_inputs(node_context& c) {
    std::vector<instruction_ref> xs;
    for (std::size_t i = 0; i < c.input_count(); ++i)
        xs.push_back(c.input(i));
    return xs;
}

// Sum/Max/Min over any number of inputs as a left fold of the binary op.
instruction_ref fold_variadic(node_context& c, K kind) {
    auto xs = c.broadcast_all(all_inputs(c));
    auto acc = xs.front();
    for (std::size_t i = 1; i < xs.size(); ++i)
        acc = c.add(op::make_elementwise(kind), {acc, xs[i]});
    return acc;
}

instruction_ref build_clip(node_context& c) {
    auto x = c.input(0);
    const auto& s = x->get_shape();
    instruction_ref lo = nullptr;
    instruction_ref hi = nullptr;
    if (c.opset() < 11) {
        // Before opset 11 the bounds are float attributes.
        lo = c.scalar(s.type(), c.attr_float("min").value_or(float(lowest(s.type()))));
        hi = c.scalar(s.type(), c.attr_float("max").value_or(float(highest(s.type()))));
    } else {
        lo = c.has_input(1) ? c.input(1) : c.scalar(s.type(), lowest(s.type()));
        hi = c.has_input(2) ? c.input(2) : c.scalar(s.type(), highest(s.type()));
        for (auto* b : {lo, hi}) {
            if (b->get_shape().elements() != 1)
                c.fail("min and max must be scalars, got ", to_string(b->get_shape()));
            if (b->get_shape().type() != s.type())
                c.fail("min and max must have the input's type ", to_string(s.type()));
        }
        if (lo->get_shape().rank() != 0) lo = c.add(op::reshape{{}}, {lo});
        if (hi->get_shape().rank() != 0) hi = c.add(op::reshape{{}}, {hi});
    }
    return c.add(op::make_elementwise(K::clip),
                 {x, c.broadcast_to(lo, s.lens()), c.broadcast_to(hi, s.lens())});
}

outputs build_dropout(node_context& c) {
    auto x = c.input(0);
    if (c.opset() >= 12 && c.has_input(2)) {
        auto training = c.constant_input(2);
        if (!training) c.unsupported("input 'training_mode' must be a constant");
        auto flags = to_vector<bool>(*training);
        if (!flags.empty() && flags.front())
            c.unsupported("training mode is not supported (inference only)");
    }
    outputs out{x};
    if (c.output_requested(1)) {
        // In inference nothing is dropped; the mask is all true (all ones before opset 10).
        dtype mask_type = c.opset() >= 10 ? dtype::boolean : x->get_shape().type();
        const auto& lens = x->get_shape().lens();
        out.push_back(c.broadcast_to(c.scalar(mask_type, 1), lens));
    }
    return out;
}

outputs build_cast(node_context& c, dtype to) {
    return {c.convert(c.input(0), to)};
}

// Gelu (opset 20): one elementwise kind, the erf form or (alpha 1) the tanh approximation.
instruction_ref build_gelu(node_context& c) {
    auto approximate = c.attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
        c.unsupported("approximate '", approximate, "'");
    return c.elementwise(op::make_elementwise(K::gelu, approximate == "tanh" ? 1.0f : 0.0f),
                         {c.input(0)});
}

struct unary_entry {
    const char* onnx_name;
    K kind;
    const char* alpha_attr = nullptr;
    float alpha = 0;
    const char* beta_attr = nullptr;
    float beta = 0;
};

} // namespace

void add_elementwise_ops(op_table& t) {
    const std::pair<const char*, K> binary[] = {
        {"Add", K::add},
        {"Sub", K::sub},
        {"Mul", K::mul},
        {"Div", K::div},
        {"Equal", K::equal},
        {"Greater", K::greater},
        {"GreaterOrEqual", K::greater_equal},
        {"Less", K::less},
        {"LessOrEqual", K::less_equal},
        {"And", K::logical_and},
        {"Or", K::logical_or},
        {"Xor", K::logical_xor},
    };
    for (auto [name, kind] : binary)
        // An init-capture: clang 14 (the fuzzing build) cannot capture a structured binding.
        t[name] = {2, 2, [kind = kind](node_context& c) -> outputs {
                       return {c.elementwise(kind, {c.input(0), c.input(1)})};
                   }};

    t["Pow"] = {2, 2, [](node_context& c) -> outputs {
                    // Since opset 12 the exponent may have another type; compute in the base's.
                    auto base = c.input(0);
                    auto exponent = c.convert(c.input(1), base->get_shape().type());
                    return {c.elementwise(K::pow, {base, exponent})};
                }};
    t["Mod"] = {2, 2, [](node_context& c) -> outputs {
                    auto fmod = c.attr_int("fmod", 0);
                    return {c.elementwise(op::make_elementwise(K::mod, float(fmod != 0)),
                                          {c.input(0), c.input(1)})};
                }};
    t["PRelu"] = {
        2, 2, [](node_context& c) -> outputs {
            // The slope broadcasts to X, never the other way.
            auto x = c.input(0);
            const auto& lens = x->get_shape().lens();
            auto common = op::broadcast_lens("PRelu", {lens, c.input_shape(1).lens()});
            if (common != lens)
                c.fail("slope ", to_string(c.input_shape(1)), " does not broadcast to X ",
                       to_string(x->get_shape()));
            return {c.add(op::make_elementwise(K::prelu), {x, c.broadcast_to(c.input(1), lens)})};
        }};
    t["Where"] = {3, 3, [](node_context& c) -> outputs {
                      return {c.elementwise(K::where, {c.input(0), c.input(1), c.input(2)})};
                  }};
    t["Clip"] = {1, 3, [](node_context& c) -> outputs { return {build_clip(c)}; }};

    t["Sum"] = {1, any_count,
                [](node_context& c) -> outputs { return {fold_variadic(c, K::add)}; }};
    t["Max"] = {1, any_count,
                [](node_context& c) -> outputs { return {fold_variadic(c, K::max)}; }};
    t["Min"] = {1, any_count,
                [](node_context& c) -> outputs { return {fold_variadic(c, K::min)}; }};
    t["Mean"] = {1, any_count, [](node_context& c) -> outputs {
                     auto sum = fold_variadic(c, K::add);
                     auto n = c.scalar(sum->get_shape().type(), double(c.input_count()));
                     return {c.elementwise(K::div, {sum, n})};
                 }};

    const unary_entry unary[] = {
        {"Neg", K::neg},
        {"Abs", K::abs},
        {"Exp", K::exp},
        {"Log", K::log},
        {"Sqrt", K::sqrt},
        {"Reciprocal", K::reciprocal},
        {"Erf", K::erf},
        {"Tanh", K::tanh},
        {"Sigmoid", K::sigmoid},
        {"Relu", K::relu},
        {"LeakyRelu", K::leaky_relu, "alpha", 0.01f},
        {"Elu", K::elu, "alpha", 1.0f},
        {"Selu", K::selu, "alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f},
        {"Celu", K::celu, "alpha", 1.0f},
        {"HardSigmoid", K::hard_sigmoid, "alpha", 0.2f, "beta", 0.5f},
        {"HardSwish", K::hard_swish},
        {"Softplus", K::softplus},
        {"Softsign", K::softsign},
        {"ThresholdedRelu", K::thresholded_relu, "alpha", 1.0f},
        {"Floor", K::floor},
        {"Ceil", K::ceil},
        {"Round", K::round},
        {"Sign", K::sign},
        {"Not", K::logical_not},
        {"IsNaN", K::isnan},
        {"Sin", K::sin},
        {"Cos", K::cos},
        {"Tan", K::tan},
        {"Asin", K::asin},
        {"Acos", K::acos},
        {"Atan", K::atan},
        {"Sinh", K::sinh},
        {"Cosh", K::cosh},
        {"Asinh", K::asinh},
        {"Acosh", K::acosh},
        {"Atanh", K::atanh},
    };
    for (const auto& e : unary)
        t[e.onnx_name] = {1, 1, [e](node_context& c) -> outputs {
                              float alpha = e.alpha_attr ? c.attr_float(e.alpha_attr, e.alpha) : 0;
                              float beta = e.beta_attr ? c.attr_float(e.beta_attr, e.beta) : 0;
                              return {
                                  c.add(op::make_elementwise(e.kind, alpha, beta), {c.input(0)})};
                          }};
    t["IsInf"] = {1, 1, [](node_context& c) -> outputs {
                      float pos = float(c.attr_int("detect_positive", 1) != 0);
                      float neg = float(c.attr_int("detect_negative", 1) != 0);
                      return {c.add(op::make_elementwise(K::isinf, pos, neg), {c.input(0)})};
                  }};
    t["Gelu"] = {1, 1, [](node_context& c) -> outputs { return {build_gelu(c)}; }};
    // Shrink: x + bias below -lambd, x - bias above lambd, 0 between.
    t["Shrink"] = {
        1, 1, [](node_context& c) -> outputs {
            auto x = c.input(0);
            const dtype type = x->get_shape().type();
            const double bias = c.attr_float("bias", 0.0f);
            const double lambd = c.attr_float("lambd", 0.5f);
            auto b = c.scalar(type, bias);
            auto above = c.elementwise(K::greater, {x, c.scalar(type, lambd)});
            auto below = c.elementwise(K::less, {x, c.scalar(type, -lambd)});
            auto inner =
                c.elementwise(K::where, {above, c.elementwise(K::sub, {x, b}), c.scalar(type, 0)});
            return {c.elementwise(K::where, {below, c.elementwise(K::add, {x, b}), inner})};
        }};
    // Mish (opset 18; YOLOv4's and some timm models' activation): x * tanh(softplus(x)), softplus
    // written so that e^x does not overflow.
    t["Mish"] = {1, 1, [](node_context& c) -> outputs {
                     auto x = c.input(0);
                     auto softplus = c.add(op::make_elementwise(K::softplus), {x});
                     auto tanh = c.add(op::make_elementwise(K::tanh), {softplus});
                     return {c.elementwise(K::mul, {x, tanh})};
                 }};

    t["Cast"] = {1, 1, [](node_context& c) -> outputs {
                     auto to = c.attr_int("to");
                     if (!to) c.fail("attribute 'to' is required");
                     auto type = to_dtype(int(*to));
                     if (!type) c.unsupported("cast to ", onnx_type_name(int(*to)));
                     return build_cast(c, *type);
                 }};
    t["CastLike"] = {
        2, 2, [](node_context& c) -> outputs { return build_cast(c, c.input_shape(1).type()); }};
    t["Identity"] = {1, 1, [](node_context& c) -> outputs { return {c.input(0)}; }};
    t["Dropout"] = {1, 3, build_dropout};
}

} // namespace conflux::onnx
