// Simplify, gather: a gather of one constant index is a slice (a view), so picking q, k and v out
// of an attention layer's packed projection costs no copy.
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/views.hpp"
#include "passes/simplify_rewrites.hpp"

namespace conflux::simplify_detail {

// From: @2 = gather{axis: a}(x, @1)          @1 a literal scalar i (or [i])
// To:   @2 = squeeze{axes: [a]}(slice{axes: [a], starts: [i], ends: [i+1]}(x))
//       (no squeeze for an index of shape [1], whose axis stays)
// An index out of range is left to gather, which reports it when evaluated.
bool find_gather_constant_index(module& m, instruction_ref ins) {
    const auto* g = ins->get_operator().get_if<op::gather>();
    if (!g) return false;
    const argument* index = literal_value(ins->inputs()[1]);
    if (!index) return false;
    const shape& is = index->get_shape();
    const bool scalar = is.rank() == 0;
    if (!(scalar || (is.rank() == 1 && is.lens()[0] == 1))) return false;
    if (is.type() != dtype::i64 && is.type() != dtype::i32) return false;
    auto* x = ins->inputs()[0];
    const auto axis = static_cast<std::size_t>(g->axis);
    const auto len = static_cast<std::int64_t>(x->get_shape().lens().at(axis));
    auto i = to_vector<std::int64_t>(*index).front();
    if (i < 0) i += len;
    if (i < 0 || i >= len) return false;
    auto* picked = m.insert_instruction(ins, op::slice{{g->axis}, {i}, {i + 1}, {}}, {x});
    if (scalar) picked = m.insert_instruction(ins, op::squeeze{{g->axis}}, {picked});
    replace(m, ins, picked);
    return true;
}

} // namespace conflux::simplify_detail
