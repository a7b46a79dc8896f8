// Simplify, reshapes through elementwise ops: an elementwise op whose other inputs are scalar
// constants commutes with a reshape before it. Moving the reshape after the op puts the op next
// to its producer, where fuse_pointwise can join them and fuse_gemm can take both into one
// epilogue (Hugging Face's attention scales q and k by a constant after reshaping them into
// heads: dot -> add bias -> reshape -> mul -> transpose; the mul ran as a kernel of its own).
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "passes/scalar_factors.hpp"
#include "passes/simplify_rewrites.hpp"

#include <cstring>
#include <optional>
#include <utility>

namespace conflux::simplify_detail {

namespace {

// The literal `ins` is or broadcasts, else nullptr.
const argument* constant_of(instruction_ref ins) {
    return ins->name() == "broadcast" ? broadcast_literal(ins) : literal_value(ins);
}

// The one-element literal `ins` is or broadcasts, else nullptr.
const argument* scalar_constant(instruction_ref ins) {
    const argument* v = constant_of(ins);
    return v != nullptr && v->get_shape().elements() == 1 ? v : nullptr;
}

// `values` (standard layout, lens `lens`) with every axis along which they do not change
// collapsed to 1: the literal a broadcast to `lens` reproduces them from.
std::pair<argument, dims> collapse_constant_axes(const argument& values, const dims& lens) {
    const std::size_t es = size_of(values.get_shape().type()), n = values.get_shape().elements();
    const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
    const shape standard{values.get_shape().type(), lens};
    dims compact = lens;
    for (std::size_t axis = 0; axis < lens.size(); ++axis) {
        if (lens[axis] <= 1) continue;
        const std::size_t stride = standard.strides()[axis];
        bool same = true;
        for (std::size_t j = 0; j < n && same; ++j) {
            const std::size_t at = j / stride % lens[axis];
            if (at != 0)
                same = std::memcmp(bytes + j * es, bytes + (j - at * stride) * es, es) == 0;
        }
        if (same) compact[axis] = 1;
    }
    argument out{shape{values.get_shape().type(), compact}};
    auto* dst = reinterpret_cast<unsigned char*>(out.data());
    const shape packed{values.get_shape().type(), compact};
    for (std::size_t j = 0; j < packed.elements(); ++j) {
        std::size_t rest = j, from = 0;
        for (std::size_t axis = compact.size(); axis-- > 0;) {
            from += rest % compact[axis] * standard.strides()[axis];
            rest /= compact[axis];
        }
        std::memcpy(dst + j * es, bytes + from * es, es);
    }
    return {std::move(out), compact};
}

// The constant `ins` (a literal in standard layout, or a broadcast of one) reshaped to `lens`:
// its values collapsed on the axes they do not vary along, to be broadcast again. A shift mask
// [1,64,1,49,49] broadcast over the heads and reshaped to [64,3,49,49] is the literal as
// [64,1,49,49]; at batch 32 ([32,64,3,49,49] to [2048,3,49,49]) the batch copies are written
// out, as [2048,1,49,49]. nullopt when that would make a constant of more than 8M elements or
// more than 64 times the literal.
std::optional<std::pair<argument, dims>> reshaped_constant(instruction_ref ins, const dims& lens) {
    const argument* v = constant_of(ins);
    if (v == nullptr || !v->get_shape().standard()) return std::nullopt;
    const std::size_t n = ins->get_shape().elements();
    if (const auto view = op::reshape_as_view(ins->get_shape(), lens)) {
        dims compact;
        for (std::size_t i = 0; i < lens.size(); ++i)
            compact.push_back(view->strides()[i] == 0 ? 1 : lens[i]);
        const shape standard{v->get_shape().type(), compact};
        bool same_order = standard.elements() == v->get_shape().elements();
        for (std::size_t i = 0; i < lens.size() && same_order; ++i)
            same_order =
                lens[i] <= 1 || view->strides()[i] == (compact[i] == 1 ? 0 : standard.strides()[i]);
        if (same_order) return std::pair{v->view(standard), compact};
    }
    if (n > (std::size_t(1) << 23) || n > 64 * v->get_shape().elements()) return std::nullopt;
    argument values = ins->name() == "broadcast"
                          ? ins->get_operator().eval(ins->get_shape(), {*v}, {}, eval_context{})
                          : *v;
    values = values.contiguous();
    return collapse_constant_axes(values.view(shape{values.get_shape().type(), lens}), lens);
}

} // namespace

// From: @3 = mul(reshape{D}(a), broadcast{D}(@c))      c one element
// To:   @3 = reshape{D}(mul(a, broadcast{lens(a)}(@c')))   c' = c as a rank-1 literal
// Any other constant input (Swin's shifted-window mask, added to the scores reshaped by window
// group and reshaped back) moves too when it can be reshaped to a's lens without a copy (its
// literal, collapsed on the broadcast axes, broadcast again); the reshapes then cancel, which
// leaves the mask next to the scores' other bias.
bool find_reshape_through_elementwise(module& m, instruction_ref ins) {
    if (!is_elementwise(ins)) return false;
    instruction_ref source = nullptr;
    for (auto* in : ins->inputs()) {
        if (constant_of(in) != nullptr) continue;
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
    // Every constant in a's lens first (computed once: writing one out may be large); none of
    // the rewrite happens when one needs a copy the limits refuse.
    std::vector<std::optional<std::pair<argument, dims>>> reshaped(ins->inputs().size());
    for (std::size_t i = 0; i < ins->inputs().size(); ++i) {
        auto* in = ins->inputs()[i];
        if (constant_of(in) == nullptr || scalar_constant(in)) continue;
        reshaped[i] = reshaped_constant(in, lens);
        if (!reshaped[i]) return false;
    }
    std::vector<instruction_ref> inputs;
    for (std::size_t i = 0; i < ins->inputs().size(); ++i) {
        auto* in = ins->inputs()[i];
        if (const argument* c = scalar_constant(in)) {
            auto value = c->contiguous();
            auto* lit = m.insert_instruction(
                ins, op::literal{value.view(shape{value.get_shape().type(), dims{1}})}, {});
            inputs.push_back(m.insert_instruction(ins, op::broadcast{lens}, {lit}));
        } else if (reshaped[i]) {
            const auto& [value, compact] = *reshaped[i];
            instruction_ref lit = m.insert_instruction(ins, op::literal{value}, {});
            inputs.push_back(
                compact == lens ? lit : m.insert_instruction(ins, op::broadcast{lens}, {lit}));
        } else {
            inputs.push_back(in->inputs()[0]);
        }
    }
    auto* moved = m.insert_instruction(ins, ins->get_operator(), std::move(inputs));
    replace(m, ins, m.insert_instruction(ins, op::reshape{ins->get_shape().lens()}, {moved}));
    return true;
}

// From: @4 = add(add(y, C1), C2)     C1, C2 constants (literals or their broadcasts), the inner
//                                    add used only here
// To:   @4 = add(y, add(C1, C2))     which find_constant then folds
// Two additive biases of attention scores (Swin's relative-position bias and its shifted-window
// mask) become one, the form fuse_attention takes. Only constants are regrouped, so a result
// changes by the rounding of the constants' sum.
bool find_constant_sum(module& m, instruction_ref ins) {
    using op::elementwise_kind;
    using passes_detail::elementwise_kind_of;
    if (elementwise_kind_of(ins) != elementwise_kind::add || ins->inputs().size() != 2)
        return false;
    for (int outer = 0; outer < 2; ++outer) {
        auto* inner = ins->inputs()[outer];
        auto* c2 = ins->inputs()[1 - outer];
        if (constant_of(c2) == nullptr || elementwise_kind_of(inner) != elementwise_kind::add ||
            inner->outputs().size() != 1 || inner->get_shape() != ins->get_shape())
            continue;
        for (int side = 0; side < 2; ++side) {
            auto* y = inner->inputs()[side];
            auto* c1 = inner->inputs()[1 - side];
            if (constant_of(c1) == nullptr || constant_of(y) != nullptr) continue;
            auto* sum =
                m.insert_instruction(ins, op::make_elementwise(elementwise_kind::add), {c1, c2});
            replace(
                m, ins,
                m.insert_instruction(ins, op::make_elementwise(elementwise_kind::add), {y, sum}));
            return true;
        }
    }
    return false;
}

} // namespace conflux::simplify_detail
