#include "conflux/ir/literal_value.hpp"

#include "conflux/ir/builtin_ops.hpp"

namespace conflux {

const argument* literal_value(const instruction* ins) {
    const auto* lit = ins->get_operator().get_if<op::literal>();
    return lit ? &lit->value : nullptr;
}

} // namespace conflux
