// Simplify: the driver and the helpers the rewrite families share. The rewrites themselves live
// in simplify_fold.cpp (constants, batch norm), simplify_views.cpp (identity views, nested
// transposes/reshapes), simplify_transpose_elementwise.cpp (moving transposes so they cancel),
// simplify_reshape_elementwise.cpp (reshapes after the scalar-constant ops that follow them),
// simplify_gather.cpp, simplify_pool.cpp (global pooling as a reduction), simplify_dot.cpp
// (batched products of one shared matrix as one product), simplify_gelu.cpp (the exporters'
// five-op GELU as one op) and simplify_broadcast_elementwise.cpp (logical ops a constant does not
// decide, elementwise ops computed once along the axes all their inputs repeat on).
#include "conflux/passes/simplify.hpp"

#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/dce.hpp"
#include "passes/simplify_rewrites.hpp"

#include <algorithm>

namespace conflux {

namespace simplify_detail {

void replace(module& m, instruction_ref old_ins, instruction_ref new_ins) {
    m.replace_all_uses(old_ins, new_ins);
}

bool is_elementwise(instruction_ref ins) {
    return ins->get_operator().get_if<op::elementwise>() != nullptr;
}

const argument* broadcast_literal(instruction_ref ins) {
    return ins->name() == "broadcast" ? literal_value(ins->inputs()[0]) : nullptr;
}

bool is_reshape_like(instruction_ref ins) {
    return ins->get_operator().traits().reshape_like;
}

argument transpose_value(const argument& a, const std::vector<std::int64_t>& perm) {
    op::transpose t{perm};
    return t.eval(t.compute_shape({a.get_shape()}), {a}).contiguous();
}

std::vector<std::int64_t> invert(const std::vector<std::int64_t>& perm) {
    std::vector<std::int64_t> inv(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i)
        inv[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
    return inv;
}

bool is_identity(const std::vector<std::int64_t>& perm) {
    for (std::size_t i = 0; i < perm.size(); ++i)
        if (perm[i] != static_cast<std::int64_t>(i)) return false;
    return true;
}

} // namespace simplify_detail

void simplify::apply(module& m) const {
    using namespace simplify_detail;
    const fold_options fold{max_fold_elements};
    // Every rewrite strictly shrinks the graph or moves a transpose towards the return, so this
    // converges; the bound only turns a rewrite bug into an error instead of a hang.
    constexpr int max_rounds = 1000;
    for (int round = 0; round < max_rounds; ++round) {
        std::vector<instruction_ref> order;
        for (auto& ins : m)
            order.push_back(&ins);
        bool changed = false;
        for (auto* ins : order) {
            // Dead values (including ones an earlier rewrite of this sweep orphaned) are left
            // to dce; rewriting them would only make more garbage.
            if (ins->outputs().empty()) continue;
            changed |=
                find_constant(m, ins, fold) || find_constant_of_broadcasts(m, ins, fold) ||
                find_conv_batch_norm(m, ins) || find_batch_norm_affine(m, ins) ||
                find_identity_view(m, ins) || find_nested_transpose(m, ins) ||
                find_nested_reshape(m, ins) || find_transpose_reshape_cancel(m, ins) ||
                find_view_chain_with_a_copy(m, ins) || find_transpose_through_elementwise(m, ins) ||
                find_transpose_through_concat(m, ins) || find_reshape_through_elementwise(m, ins) ||
                find_constant_sum(m, ins) || find_gather_constant_index(m, ins) ||
                find_global_pool(m, ins) || find_dot_of_a_shared_matrix(m, ins) ||
                find_gelu(m, ins) || find_rms_norm(m, ins) || find_undeciding_constant(m, ins) ||
                find_elementwise_of_broadcasts(m, ins);
        }
        dce{}.apply(m);
        if (!changed) return;
    }
    throw_internal_error("simplify: no fixed point after ", max_rounds, " rounds");
}

} // namespace conflux
