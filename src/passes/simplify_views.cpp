// Simplify, views: identity views removed, chains of transposes or of reshapes collapsed into
// one, and transpose/reshape pairs that undo each other removed.
#include "conflux/ops/views.hpp"
#include "passes/simplify_rewrites.hpp"

namespace conflux::simplify_detail {

namespace {

const std::vector<std::int64_t>* permutation_of(instruction_ref ins) {
    const auto* t = ins->get_operator().get_if<op::transpose>();
    return t ? &t->permutation : nullptr;
}

// True when transposing a value of `lens` by `perm` keeps the order of its axes longer than 1:
// the elements are then in the same row-major order, so the transpose is really a reshape.
bool moves_only_unit_axes(const std::vector<std::int64_t>& perm, const dims& lens) {
    std::int64_t last = -1;
    for (auto p : perm) {
        if (lens[static_cast<std::size_t>(p)] == 1) continue;
        if (p < last) return false;
        last = p;
    }
    return true;
}

} // namespace

// From: @1 = transpose{permutation: [0,1,2]}(x)    (or reshape/squeeze/... to x's own lens,
//       or a slice with unit steps that keeps every element)
// To:   x
bool find_identity_view(module& m, instruction_ref ins) {
    const op_traits t = ins->get_operator().traits();
    if (!(t.layout_only || t.replicates || t.selects)) return false;
    auto* x = ins->inputs()[0];
    if (x->get_shape().lens() != ins->get_shape().lens()) return false;
    if (const auto* perm = permutation_of(ins); perm && !is_identity(*perm)) return false;
    if (const auto* s = ins->get_operator().get_if<op::slice>())
        for (auto step : s->steps)
            if (step != 1) return false; // a reversing slice keeps the lens, not the order
    replace(m, ins, x);
    return true;
}

// From: @2 = transpose{Q}(transpose{P}(x))
// To:   @2 = transpose{R}(x), R[i] = P[Q[i]]; or x itself when R is the identity
bool find_nested_transpose(module& m, instruction_ref ins) {
    const auto* q = permutation_of(ins);
    if (!q) return false;
    auto* inner = ins->inputs()[0];
    const auto* p = permutation_of(inner);
    if (!p) return false;
    std::vector<std::int64_t> r(q->size());
    for (std::size_t i = 0; i < r.size(); ++i)
        r[i] = (*p)[static_cast<std::size_t>((*q)[i])];
    auto* x = inner->inputs()[0];
    replace(m, ins, is_identity(r) ? x : m.insert_instruction(ins, op::transpose{r}, {x}));
    return true;
}

// From: @2 = unsqueeze{axes: [0]}(flatten{axis: 1}(x))   (any two of reshape, flatten, squeeze,
//       unsqueeze)
// To:   @2 = reshape{dims: lens of @2}(x); or x itself when the lens are x's
bool find_nested_reshape(module& m, instruction_ref ins) {
    if (!is_reshape_like(ins)) return false;
    auto* inner = ins->inputs()[0];
    if (!is_reshape_like(inner)) return false;
    auto* x = inner->inputs()[0];
    const dims& lens = ins->get_shape().lens();
    replace(m, ins,
            x->get_shape().lens() == lens ? x : m.insert_instruction(ins, op::reshape{lens}, {x}));
    return true;
}

// From: @2 = reshape{dims: [2,3]}(transpose{[1,0,2]}(x))    x: [1,2,3]
//       (or transpose(reshape(x))) where the transpose only moves axes of length 1
// To:   x   (same lens, same element order)
bool find_transpose_reshape_cancel(module& m, instruction_ref ins) {
    auto* inner = ins->inputs().empty() ? nullptr : ins->inputs()[0];
    if (!inner) return false;
    const std::vector<std::int64_t>* perm = nullptr;
    const dims* transposed_lens = nullptr; // lens of the transpose's input
    if (is_reshape_like(ins) && (perm = permutation_of(inner)))
        transposed_lens = &inner->inputs()[0]->get_shape().lens();
    else if ((perm = permutation_of(ins)) && is_reshape_like(inner))
        transposed_lens = &inner->get_shape().lens();
    else
        return false;
    auto* x = inner->inputs()[0];
    if (x->get_shape().lens() != ins->get_shape().lens() ||
        !moves_only_unit_axes(*perm, *transposed_lens))
        return false;
    replace(m, ins, x);
    return true;
}

} // namespace conflux::simplify_detail
