#include "cuda/lower/fused_op_splits.hpp"

#include "conflux/util/errors.hpp"

namespace conflux::cuda {

namespace {

fused_op_split split_fused_op(const instruction& op, program& parts) {
    const module& sm = *op.module_inputs().at(0);
    fused_op_split s;
    for (const instruction& i : sm)
        if (i.get_operator().traits().anchor) s.anchor = const_cast<instruction*>(&i);
    CONFLUX_ASSERT(s.anchor != nullptr, "fused gemm module ", sm.name(), " has no anchor");
    const instruction_ref ret = sm.get_return();
    if (ret->inputs().size() == 1 && ret->inputs()[0] == s.anchor) return s;

    s.at_anchor = sm.split(parts, op.inputs(), {s.anchor});
    CONFLUX_ASSERT(s.at_anchor.size() == 2, sm.name(), ": split gave ", s.at_anchor.size(),
                   " parts");
    const std::vector<instruction_ref> tails = find_tail_splits(sm);
    bool has_tail = false, tail_after_anchor = true;
    for (std::size_t r = 0; r < tails.size(); ++r) {
        has_tail = has_tail || tails[r] != ret->inputs()[r];
        tail_after_anchor = tail_after_anchor && tails[r] != s.anchor;
    }
    if (has_tail && tail_after_anchor) {
        s.three_way = sm.split(parts, op.inputs(), {s.anchor}, tails);
        CONFLUX_ASSERT(s.three_way.size() == 3, sm.name(), ": split gave ", s.three_way.size(),
                       " parts");
    }
    return s;
}

} // namespace

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

fused_op_splits split_fused_ops(const module& m) {
    fused_op_splits out;
    for (const instruction& ins : m)
        if (ins.get_operator().traits().has_anchor_module)
            out.by_op.emplace(&ins, split_fused_op(ins, out.parts));
    return out;
}

} // namespace conflux::cuda
