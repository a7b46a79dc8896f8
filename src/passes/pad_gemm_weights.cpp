// From: @3 = dot(x, @w)                        @w: literal [K, N], N * element size % 16 != 0
// To:   @3 = dot(x, slice{[1], [0], [N]}(@w'))  @w': [K, N'], N' the next multiple of 16 bytes
// The weights' rows then start 16-byte aligned; the GEMM loader copies the last, partial
// vector of each row with cp.async's source size (the rest of the vector zero-filled).
// Only literals used by products alone (a padded copy beside the original would double it).
#include "conflux/passes/pad_gemm_weights.hpp"

#include "conflux/ir/literal_value.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/views.hpp"

#include <algorithm>
#include <cstring>

namespace conflux {

namespace {

constexpr std::size_t row_alignment = 16; // bytes: one cp.async / vector load

bool only_products_use(instruction_ref w) {
    return std::all_of(w->outputs().begin(), w->outputs().end(), [&](instruction_ref u) {
        return u->get_operator().get_if<op::dot>() != nullptr && u->inputs().size() == 2 &&
               u->inputs()[1] == w && u->inputs()[0] != w;
    });
}

argument padded_columns(const argument& value, std::size_t padded_len) {
    const argument v = value.contiguous();
    const shape& s = v.get_shape();
    const std::size_t rows = s.lens()[0], len = s.lens()[1], bytes = size_of(s.type());
    argument out(shape{s.type(), {rows, padded_len}});
    for (std::size_t r = 0; r < rows; ++r)
        std::memcpy(out.data() + r * padded_len * bytes, v.data() + r * len * bytes, len * bytes);
    return out;
}

} // namespace

void pad_gemm_weights::apply(module& m) const {
    std::vector<instruction_ref> weights;
    for (auto& ins : m) {
        const auto* v = literal_value(&ins);
        if (!v || v->get_shape().rank() != 2 || ins.outputs().empty()) continue;
        const std::size_t bytes = size_of(v->get_shape().type());
        if (row_alignment % bytes != 0 || v->get_shape().lens()[1] * bytes % row_alignment == 0)
            continue;
        if (only_products_use(&ins)) weights.push_back(&ins);
    }
    for (auto* w : weights) {
        const argument& v = *literal_value(w);
        const std::size_t len = v.get_shape().lens()[1];
        const std::size_t per_row = row_alignment / size_of(v.get_shape().type());
        const std::size_t padded_len = (len + per_row - 1) / per_row * per_row;
        auto* padded = m.insert_instruction(w, op::literal{padded_columns(v, padded_len)}, {});
        auto* view = m.insert_instruction(
            w, op::slice{{1}, {0}, {static_cast<std::int64_t>(len)}, {}}, {padded});
        m.replace_all_uses(w, view);
        m.remove_instruction(w);
    }
}

} // namespace conflux
