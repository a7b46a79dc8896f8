#include "passes/attention_grouped_heads.hpp"

#include "conflux/ops/attention.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/util/errors.hpp"

#include <numeric>
#include <optional>
#include <vector>

namespace conflux::passes_detail {

namespace {

// A reshape that merges axes (axis, axis + 1) of `grouped` [.., kv, r, ..] into one batch axis,
// `grouped` being a broadcast along axis + 1 (stride 0): the copy that repeats each head r times.
struct repeat {
    instruction_ref grouped;
    std::size_t axis = 0;
    std::size_t kv = 0;
    std::size_t r = 0;
};

std::optional<repeat> as_repeat(instruction_ref x, std::size_t batch_rank) {
    if (x->get_operator().get_if<op::reshape>() == nullptr) return std::nullopt;
    const instruction_ref y = x->inputs().front();
    const shape& in = y->get_shape();
    const dims& out = x->get_shape().lens();
    if (in.rank() != out.size() + 1 || op::reshape_as_view(in, out)) return std::nullopt;
    for (std::size_t p = 0; p < batch_rank; ++p) {
        const std::size_t kv = in.lens()[p], r = in.lens()[p + 1];
        if (r < 2 || in.strides()[p + 1] != 0 || kv * r != out[p]) continue;
        bool rest_equal = true;
        for (std::size_t j = 0; j < out.size(); ++j)
            if (j != p) rest_equal = rest_equal && in.lens()[j < p ? j : j + 1] == out[j];
        if (rest_equal) return repeat{y, p, kv, r};
    }
    return std::nullopt;
}

// The keys' transpose that makes kt: batch axes kept, the last two swapped.
bool is_key_transpose(instruction_ref x) {
    const auto* t = x->get_operator().get_if<op::transpose>();
    if (t == nullptr) return false;
    const std::size_t rank = t->permutation.size();
    for (std::size_t i = 0; i + 2 < rank; ++i)
        if (t->permutation[i] != static_cast<std::int64_t>(i)) return false;
    return rank >= 2 && t->permutation[rank - 2] == static_cast<std::int64_t>(rank - 1) &&
           t->permutation[rank - 1] == static_cast<std::int64_t>(rank - 2);
}

std::optional<repeat> repeat_under(instruction_ref x, bool keys, std::size_t batch_rank) {
    if (keys) {
        if (!is_key_transpose(x)) return std::nullopt;
        x = x->inputs().front();
    }
    return as_repeat(x, batch_rank);
}

dims split_axis(dims lens, std::size_t axis, std::size_t kv, std::size_t r) {
    lens[axis] = r;
    lens.insert(lens.begin() + static_cast<std::ptrdiff_t>(axis), kv);
    return lens;
}

op::transpose keys_to_kt(std::size_t rank) {
    std::vector<std::int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[rank - 2], perm[rank - 1]);
    return op::transpose{perm};
}

} // namespace

instruction_ref
group_repeated_heads(module& m, instruction_ref att,
                     const std::function<std::string(const std::vector<shape>&)>& obstacle) {
    const auto& a = *att->get_operator().get_if<op::attention>();
    const std::vector<instruction_ref> inputs = att->inputs();
    const std::size_t batch_rank = inputs[0]->get_shape().rank() - 2;
    const auto keys = repeat_under(inputs[1], true, batch_rank);
    const auto values = repeat_under(inputs[2], false, batch_rank);
    const std::optional<repeat> found = keys ? keys : values;
    if (!found) return att;
    const std::size_t p = found->axis, kv = found->kv, r = found->r;
    auto same_split = [&](const std::optional<repeat>& x) {
        return x && x->axis == p && x->kv == kv && x->r == r;
    };

    // Every operand grouped: the repeats by their broadcast (the keys transposed to kt again),
    // the rest (q, a bias, keys or values stored once per query head) by a view that splits the
    // axis. Nothing is inserted until every check passed.
    struct grouped_operand {
        instruction_ref from;
        std::optional<operation> view; // none: `from` is the operand as it is
        shape grouped;
    };
    std::vector<grouped_operand> operands;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const std::optional<repeat>& rep = i == 1 ? keys : values;
        if ((i == 1 || i == 2) && same_split(rep)) {
            const shape& g = rep->grouped->get_shape();
            const op::transpose kt = keys_to_kt(g.rank());
            operands.push_back(i == 1 ? grouped_operand{rep->grouped, kt, kt.compute_shape({g})}
                                      : grouped_operand{rep->grouped, std::nullopt, g});
            continue;
        }
        const dims lens = split_axis(inputs[i]->get_shape().lens(), p, kv, r);
        auto view = op::reshape_as_view(inputs[i]->get_shape(), lens);
        if (!view) return att;
        operands.push_back({inputs[i], op::reshape{lens}, *view});
    }
    std::vector<shape> grouped_shapes;
    for (const auto& o : operands)
        grouped_shapes.push_back(o.grouped);

    // The result's axis p sits where out_perm puts it; the grouped op keeps (kv, r) together.
    op::attention grouped = a;
    std::size_t out_axis = p;
    if (!a.out_perm.empty()) {
        grouped.out_perm.clear();
        for (std::size_t j = 0; j < a.out_perm.size(); ++j) {
            const auto from = static_cast<std::size_t>(a.out_perm[j]);
            if (from == p) out_axis = j;
            if (from <= p) grouped.out_perm.push_back(static_cast<std::int64_t>(from));
            if (from >= p) grouped.out_perm.push_back(static_cast<std::int64_t>(from + 1));
        }
    }
    const shape& result = att->get_shape();
    std::optional<shape> grouped_result;
    try {
        grouped_result = grouped.compute_shape(grouped_shapes);
    } catch (const user_error&) {
        return att;
    }
    if (grouped_result->lens() != split_axis(result.lens(), out_axis, kv, r) ||
        !op::reshape_as_view(*grouped_result, result.lens()))
        return att;
    if (obstacle && !obstacle(grouped_shapes).empty()) return att;

    std::vector<instruction_ref> grouped_inputs;
    for (const auto& o : operands)
        grouped_inputs.push_back(o.view ? m.insert_instruction(att, *o.view, {o.from}) : o.from);
    const instruction_ref g = m.insert_instruction(att, grouped, grouped_inputs);
    const instruction_ref merged = m.insert_instruction(att, op::reshape{result.lens()}, {g});
    m.replace_all_uses(att, merged);
    m.remove_instruction(att);
    return g;
}

} // namespace conflux::passes_detail
