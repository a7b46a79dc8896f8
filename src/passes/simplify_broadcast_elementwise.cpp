// Simplify, elementwise ops over broadcasts: a logical op or a where whose constant operand
// decides nothing is dropped, and an elementwise op whose inputs all repeat along an axis is
// computed once along it and broadcast after. Hugging Face's masking utilities (transformers 5)
// write the attention mask of an encoder as and(row_mask, all_true[1, 1, Sq, 1]) and then
// where(that, 0, min): the all-true term made the mask a full [B, 1, Sq, Sk] tensor, written by
// a kernel and read per score by attention, where its values repeat along the query axis. With
// both rewrites it is a [B, 1, 1, Sk] tensor seen through a broadcast, as the older exporters
// wrote it (the attention kernel then reads one bias row per batch entry).
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "passes/simplify_rewrites.hpp"

#include <algorithm>
#include <optional>

namespace conflux::simplify_detail {

namespace {

// The one truth value every element of `ins` has when it is a literal (through broadcasts)
// whose elements are all zero or all non-zero; nothing otherwise.
std::optional<bool> uniform_truth(instruction_ref ins) {
    while (ins->name() == "broadcast")
        ins = ins->inputs()[0];
    const argument* v = literal_value(ins);
    if (!v || v->get_shape().elements() == 0) return std::nullopt;
    const auto values = to_vector<double>(*v);
    const bool first = values.front() != 0.0;
    for (double x : values)
        if ((x != 0.0) != first) return std::nullopt;
    return first;
}

// `value` at the lens of `ins` (a broadcast of it where its lens are smaller), in place of ins.
bool replace_with(module& m, instruction_ref ins, instruction_ref value) {
    if (value->get_shape().type() != ins->get_shape().type()) return false;
    if (value->get_shape().lens() != ins->get_shape().lens())
        value = m.insert_instruction(ins, op::broadcast{ins->get_shape().lens()}, {value});
    replace(m, ins, value);
    return true;
}

// The source of `in` when `in` is a broadcast and its source also broadcasts to `reduced` (or
// has those lens).
std::optional<instruction_ref> broadcast_source_for(instruction_ref in, const dims& reduced) {
    if (in->name() != "broadcast") return std::nullopt;
    instruction_ref source = in->inputs()[0];
    const dims& lens = source->get_shape().lens();
    if (lens.size() > reduced.size()) return std::nullopt;
    for (std::size_t i = 0; i < lens.size(); ++i) {
        const std::size_t o = reduced.size() - lens.size() + i;
        if (lens[i] != reduced[o] && lens[i] != 1) return std::nullopt;
    }
    return source;
}

} // namespace

// From: @7 = and(broadcast(@all_true), @x)      To: @x (broadcast to @7's lens if smaller)
// Also or(x, all false) -> x, where(all true, a, b) -> a, where(all false, a, b) -> b.
bool find_undeciding_constant(module& m, instruction_ref ins) {
    const auto* e = ins->get_operator().get_if<op::elementwise>();
    if (!e) return false;
    const auto& in = ins->inputs();
    using op::elementwise_kind;
    if (e->kind == elementwise_kind::where) {
        const auto truth = uniform_truth(in[0]);
        return truth && replace_with(m, ins, *truth ? in[1] : in[2]);
    }
    if (e->kind != elementwise_kind::logical_and && e->kind != elementwise_kind::logical_or)
        return false;
    // and(x, true) and or(x, false) are x.
    const bool neutral = e->kind == elementwise_kind::logical_and;
    for (std::size_t i = 0; i < 2; ++i) {
        const auto truth = uniform_truth(in[i]);
        if (truth && *truth == neutral && replace_with(m, ins, in[1 - i])) return true;
    }
    return false;
}

// From: @10 = where(broadcast(@m), broadcast(@zero), broadcast(@min))    [1, 1, 8, 8], every
//       input repeating along axis 2
// To:   @10' = where(@m, broadcast(@zero), broadcast(@min))              [1, 1, 1, 8]
//       @10 = broadcast(@10')                                            [1, 1, 8, 8]
// Only where every input is a broadcast whose source broadcasts to the smaller lens; the result
// has strictly fewer elements, so this cannot undo itself.
bool find_elementwise_of_broadcasts(module& m, instruction_ref ins) {
    if (!is_elementwise(ins) || ins->inputs().empty()) return false;
    const dims& lens = ins->get_shape().lens();
    dims reduced(lens.size(), 1);
    for (auto* in : ins->inputs()) {
        const shape& s = in->get_shape();
        if (s.lens() != lens) return false;
        for (std::size_t d = 0; d < lens.size(); ++d)
            if (s.strides()[d] != 0) reduced[d] = lens[d];
    }
    if (reduced == lens) return false;
    std::vector<instruction_ref> sources;
    for (auto* in : ins->inputs()) {
        const auto source = broadcast_source_for(in, reduced);
        if (!source) return false;
        sources.push_back(*source);
    }
    std::vector<instruction_ref> inputs;
    for (auto* source : sources)
        inputs.push_back(source->get_shape().lens() == reduced
                             ? source
                             : m.insert_instruction(ins, op::broadcast{reduced}, {source}));
    auto* computed = m.insert_instruction(ins, ins->get_operator(), inputs);
    replace(m, ins, m.insert_instruction(ins, op::broadcast{lens}, {computed}));
    return true;
}

} // namespace conflux::simplify_detail
