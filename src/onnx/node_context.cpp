#include "onnx/node_context.hpp"

#include "conflux/ir/literal_value.hpp"
#include "conflux/ops/views.hpp"

#include <algorithm>
#include <numeric>
#include <set>

namespace conflux::onnx {

std::optional<argument> constant_value(instruction_ref ins) {
    if (const auto* v = literal_value(ins)) return *v;
    if (const auto* b = ins->get_operator().get_if<op::broadcast>()) {
        if (const auto* v = literal_value(ins->inputs().front()))
            return b->eval(ins->get_shape(), {*v});
    }
    return std::nullopt;
}

node_context::node_context(const ::onnx::NodeProto& node, std::size_t index, std::int64_t opset,
                           module& m, std::vector<instruction_ref> inputs, external_data* external)
    : node_(node), index_(index), opset_(opset), m_(m), inputs_(std::move(inputs)),
      external_(external) {}

std::string node_context::node_name() const {
    return node_.name().empty() ? "#" + std::to_string(index_) : node_.name();
}

std::string node_context::prefix() const {
    return detail::concat(op_type(), " (node '", node_name(), "', opset ", opset_, "): ");
}

std::string node_context::unsupported_prefix() const {
    return detail::concat("unsupported operator '", op_type(), "' (node '", node_name(),
                          "', domain '", node_.domain(), "', opset ", opset_, "): ");
}

instruction_ref node_context::input(std::size_t i) const {
    if (!has_input(i)) fail("input ", i, " is required but missing");
    return inputs_[i];
}

std::optional<argument> node_context::constant_input(std::size_t i) const {
    if (!has_input(i)) return std::nullopt;
    return constant_value(inputs_[i]);
}

argument node_context::require_constant(std::size_t i, std::string_view what) const {
    auto v = constant_input(i);
    if (!v) {
        if (!has_input(i)) fail("input '", what, "' is required but missing");
        fail("input '", what, "' must be a constant");
    }
    return *v;
}

std::vector<std::int64_t> node_context::constant_ints(std::size_t i, std::string_view what) const {
    auto v = require_constant(i, what);
    if (!is_integral(v.get_shape().type()))
        fail("input '", what, "' must hold integers, got ", to_string(v.get_shape().type()));
    return to_vector<std::int64_t>(v);
}

std::int64_t node_context::constant_int(std::size_t i, std::string_view what) const {
    const auto values = constant_ints(i, what);
    if (values.size() != 1 || input_shape(i).rank() > 1)
        fail("input '", what, "' must hold one integer, got shape ", to_string(input_shape(i)));
    return values.front();
}

std::vector<double> node_context::constant_doubles(std::size_t i, std::string_view what) const {
    return to_vector<double>(require_constant(i, what));
}

instruction_ref node_context::add(const operation& op, std::vector<instruction_ref> inputs) {
    // A broadcast of a literal stays a view (a scalar stays one value for the fused kernels);
    // ops that consume it still fold, through constant_value.
    const bool foldable = op.get_if<op::broadcast>() == nullptr && !inputs.empty();
    std::vector<argument> args;
    for (auto* in : inputs) {
        if (!foldable) break;
        auto v = constant_value(in);
        if (!v) break;
        args.push_back(*v);
    }
    if (foldable && args.size() == inputs.size()) {
        std::vector<shape> shapes;
        for (auto& a : args)
            shapes.push_back(a.get_shape());
        auto s = op.compute_shape(shapes);
        // A tuple result (TopK's values and indices) stays an instruction: literals hold one
        // value each.
        if (!s.is_tuple() && s.elements() <= fold_limit) {
            auto value = op.eval(s, args, {}, eval_context{});
            // Literals own standard copies so that no literal aliases another's storage.
            return m_.add_literal(value.contiguous());
        }
    }
    return m_.add_instruction(op, std::move(inputs));
}

instruction_ref node_context::add_literal(argument value) {
    return m_.add_literal(std::move(value));
}

instruction_ref node_context::scalar(dtype t, double value) {
    return add_literal(from_vector<double>(t, {}, std::vector<double>{value}));
}

instruction_ref node_context::positions_along(std::size_t axis, std::size_t rank, std::size_t len) {
    dims lens(rank, 1);
    lens[axis] = len;
    std::vector<std::int64_t> positions(len);
    std::iota(positions.begin(), positions.end(), std::int64_t{0});
    return add_literal(from_vector(dtype::i64, lens, positions));
}

instruction_ref node_context::broadcast_to(instruction_ref x, const dims& lens) {
    if (x->get_shape().lens() == lens) return x;
    return add(op::broadcast{lens}, {x});
}

std::vector<instruction_ref> node_context::broadcast_all(std::vector<instruction_ref> xs) {
    std::vector<dims> lens;
    for (auto* x : xs)
        lens.push_back(x->get_shape().lens());
    auto common = op::broadcast_lens(op_type(), lens);
    for (auto*& x : xs)
        x = broadcast_to(x, common);
    return xs;
}

instruction_ref node_context::elementwise(const op::elementwise& op,
                                          std::vector<instruction_ref> xs) {
    return add(op, broadcast_all(std::move(xs)));
}

instruction_ref node_context::convert(instruction_ref x, dtype t) {
    if (x->get_shape().type() == t) return x;
    return add(op::make_convert(t), {x});
}

std::int64_t node_context::normalize_axis(std::int64_t axis, std::size_t rank,
                                          std::string_view what) const {
    auto r = std::int64_t(rank);
    if (axis < -r || axis >= r) fail(what, " ", axis, " is out of range for rank ", rank);
    return axis < 0 ? axis + r : axis;
}

std::vector<std::int64_t> node_context::normalize_axes(const std::vector<std::int64_t>& axes,
                                                       std::size_t rank,
                                                       std::string_view what) const {
    std::vector<std::int64_t> out;
    std::set<std::int64_t> seen;
    for (auto a : axes) {
        auto n = normalize_axis(a, rank, what);
        if (!seen.insert(n).second) fail(what, " lists axis ", a, " twice");
        out.push_back(n);
    }
    return out;
}

} // namespace conflux::onnx
