#include "passes/scalar_factors.hpp"

#include "conflux/ir/builtin_ops.hpp"
#include "conflux/ops/views.hpp"

namespace conflux::passes_detail {

std::optional<op::elementwise_kind> elementwise_kind_of(instruction_ref ins) {
    const auto* e = ins->get_operator().get_if<op::elementwise>();
    if (e == nullptr) return std::nullopt;
    return e->kind;
}

std::optional<double> scalar_literal(instruction_ref ins) {
    while (ins->get_operator().get_if<op::broadcast>() != nullptr)
        ins = ins->inputs()[0];
    const auto* lit = ins->get_operator().get_if<op::literal>();
    if (lit == nullptr || lit->value.get_shape().elements() != 1) return std::nullopt;
    return to_vector<double>(lit->value)[0];
}

std::optional<std::pair<instruction_ref, double>> scaled_by_scalar(instruction_ref ins) {
    using op::elementwise_kind;
    const auto kind = elementwise_kind_of(ins);
    if (!kind || ins->inputs().size() != 2) return std::nullopt;
    const auto a = ins->inputs()[0], b = ins->inputs()[1];
    if (*kind == elementwise_kind::mul) {
        if (auto c = scalar_literal(b)) return std::pair{a, *c};
        if (auto c = scalar_literal(a)) return std::pair{b, *c};
    } else if (*kind == elementwise_kind::div) {
        if (auto c = scalar_literal(b); c && *c != 0) return std::pair{a, 1.0 / *c};
    }
    return std::nullopt;
}

} // namespace conflux::passes_detail
