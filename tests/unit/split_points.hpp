// Split points for testing module::split at every legal place, beyond the one the lowering uses
// (cuda/lower/fused_op_splits.hpp splits at the anchor and at the layout tails): a gemm split
// point further down the epilogue, and the check that a pointwise part holds only what a
// pointwise kernel can run.
#pragma once

#include "conflux/ir/module.hpp"
#include "conflux/util/errors.hpp"

#include <functional>

namespace conflux::test {

// Walks from `anchor` along single-use users while `can_hold(user)` says a gemm kernel could
// still hold that op; returns the last instruction reached (the anchor itself when none). Only a
// single-use chain can move into the kernel: a value with another user must be materialised.
inline instruction_ref find_gemm_split(instruction_ref anchor,
                                       const std::function<bool(instruction_ref)>& can_hold) {
    auto* current = anchor;
    while (current->outputs().size() == 1) {
        auto* user = current->outputs().front();
        if (user->is_return() || !can_hold(user)) break;
        current = user;
    }
    return current;
}

// Accepts only pointwise ops, literals, parameters, the return, views whose input is a
// parameter or literal (another way to read an input) and layout changes (reshape, transpose,
// ...) of computed values, which the index generator follows as a change of position (a
// residual added after the projection is transposed: fuse_gemm's later pointwise ops);
// otherwise throws internal_error naming the first offending instruction.
inline void check_pointwise_only(const module& m) {
    auto names = m.print_names();
    for (const auto& ins : m) {
        if (ins.is_param() || ins.is_literal() || ins.is_return()) continue;
        auto traits = ins.get_operator().traits();
        if (traits.pointwise || traits.layout_only) continue;
        if (traits.view && !ins.inputs().empty() &&
            (ins.inputs().front()->is_param() || ins.inputs().front()->is_literal()))
            continue;
        throw_internal_error("module ", m.name(), " is not pointwise-only: ", names.at(&ins), " (",
                             ins.name(), ") is neither a pointwise op nor a view of an input");
    }
}

} // namespace conflux::test
