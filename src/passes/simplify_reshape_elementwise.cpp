// Simplify, reshapes through elementwise ops: an elementwise op whose other inputs are scalar
// constants commutes with a reshape before it. Moving the reshape after the op puts the op next
// to its producer, where fuse_pointwise can join them and fuse_gemm can take both into one
// epilogue (Hugging Face's attention scales q and k by a constant after reshaping them into
// heads: dot -> add bias -> reshape -> mul -> transpose; the mul ran as a kernel of its own).
#include "conflux/ops/views.hpp"
#include "passes/simplify_rewrites.hpp"

namespace conflux::simplify_detail {

namespace {

// The one-element literal `ins` is or broadcasts, else nullptr.
const argument* scalar_constant(instruction_ref ins) {
    const argument* v = ins->name() == "broadcast" ? broadcast_literal(ins) : literal_value(ins);
    return v != nullptr && v->get_shape().elements() == 1 ? v : nullptr;
}

} // namespace

// From: @3 = mul(reshape{D}(a), broadcast{D}(@c))      c one element
// To:   @3 = reshape{D}(mul(a, broadcast{lens(a)}(@c')))   c' = c as a rank-1 literal
bool find_reshape_through_elementwise(module& m, instruction_ref ins) {
    if (!is_elementwise(ins)) return false;
    instruction_ref source = nullptr;
    for (auto* in : ins->inputs()) {
        if (scalar_constant(in)) continue;
        if (in->name() != "reshape") return false;
        auto* from = in->inputs()[0];
        if (source && source->get_shape().lens() != from->get_shape().lens()) return false;
        source = from;
    }
    // Only where the op lands next to something it can join (an elementwise op, a product's
    // epilogue); a view before the reshape (the slices of a fused QKV) gains nothing, and
    // fuse_attention finds a scale of q or k after the views, not before them.
    if (source == nullptr) return false;
    if (!is_elementwise(source) && source->name() != "dot" && source->name() != "convolution")
        return false;
    const dims& lens = source->get_shape().lens();
    std::vector<instruction_ref> inputs;
    for (auto* in : ins->inputs()) {
        if (const argument* c = scalar_constant(in)) {
            auto value = c->contiguous();
            auto* lit = m.insert_instruction(
                ins, op::literal{value.view(shape{value.get_shape().type(), dims{1}})}, {});
            inputs.push_back(m.insert_instruction(ins, op::broadcast{lens}, {lit}));
        } else {
            inputs.push_back(in->inputs()[0]);
        }
    }
    auto* moved = m.insert_instruction(ins, ins->get_operator(), std::move(inputs));
    replace(m, ins, m.insert_instruction(ins, op::reshape{ins->get_shape().lens()}, {moved}));
    return true;
}

} // namespace conflux::simplify_detail
