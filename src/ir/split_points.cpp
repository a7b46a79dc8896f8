// Split points of a fused gemm module (DESIGN.md, "Compiling a fused gemm op", step 4).
#include "conflux/ir/split_points.hpp"

namespace conflux {

instruction_ref find_gemm_split(instruction_ref anchor,
                                const std::function<bool(instruction_ref)>& can_hold) {
    // Only a single-use chain can move into the gemm kernel: a value with another user must be
    // materialised anyway, so the kernel has to stop there.
    auto* current = anchor;
    while (current->outputs().size() == 1) {
        auto* user = current->outputs().front();
        if (user->is_return() || !can_hold(user)) break;
        current = user;
    }
    return current;
}

std::vector<instruction_ref> find_tail_splits(const module& m) {
    std::vector<instruction_ref> splits;
    auto* ret = m.get_return();
    if (ret == nullptr) return splits;
    for (auto* value : ret->inputs()) {
        while (value->get_operator().traits().layout_only && !value->inputs().empty())
            value = value->inputs().front();
        splits.push_back(value);
    }
    return splits;
}

void check_pointwise_only(const module& m) {
    auto names = m.print_names();
    for (const auto& ins : m) {
        if (ins.is_param() || ins.is_literal() || ins.is_return()) continue;
        auto traits = ins.get_operator().traits();
        if (traits.pointwise) continue;
        // A view of a module input is just another way to read it; a view of a computed value
        // would need the value materialised first, which the pointwise kernel cannot do.
        if (traits.view && !ins.inputs().empty() &&
            (ins.inputs().front()->is_param() || ins.inputs().front()->is_literal()))
            continue;
        throw_internal_error("module ", m.name(), " is not pointwise-only: ", names.at(&ins), " (",
                             ins.name(), ") is neither a pointwise op nor a view of an input");
    }
}

} // namespace conflux
