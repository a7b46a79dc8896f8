#include "conflux/passes/reduced_precision.hpp"

#include "conflux/ops/elementwise.hpp"
#include "conflux/util/errors.hpp"

#include <algorithm>
#include <map>

namespace conflux {

namespace {

instruction_ref next_of(module& m, instruction_ref ins) {
    auto it = std::find_if(m.begin(), m.end(), [&](const instruction& i) { return &i == ins; });
    CONFLUX_ASSERT(it != m.end() && std::next(it) != m.end(), "reduced_precision: ", ins->name(),
                   " has no successor");
    return &*std::next(it);
}

} // namespace

void reduced_precision::apply(module& m) const {
    CONFLUX_ASSERT(target == dtype::f16 || target == dtype::bf16, "reduced_precision to ",
                   to_string(target));
    const auto convert_to = [](dtype t) { return op::make_convert(t); };
    std::vector<instruction_ref> order;
    for (instruction& ins : m)
        if (!ins.is_return()) order.push_back(&ins);
    // What each value's users read instead: its 16-bit version. Every instruction is rebuilt
    // once, in order, with all its inputs mapped, so no op ever sees a mix mid-way.
    std::map<instruction_ref, instruction_ref> use;
    auto mapped = [&](std::vector<instruction_ref> inputs) {
        for (instruction_ref& in : inputs)
            if (auto it = use.find(in); it != use.end()) in = it->second;
        return inputs;
    };
    for (instruction_ref ins : order) {
        const shape& s = ins->get_shape();
        if (ins->is_param() || ins->is_literal()) {
            if (!s.is_tuple() && s.type() == dtype::f32 && !ins->outputs().empty())
                use[ins] = m.insert_instruction(next_of(m, ins), convert_to(target), {ins});
            continue;
        }
        const operation& op = ins->get_operator();
        std::vector<instruction_ref> inputs = mapped(ins->inputs());
        const std::vector<module*> modules(ins->module_inputs().begin(),
                                           ins->module_inputs().end());
        if (const auto* e = op.get_if<op::elementwise>();
            e != nullptr && e->kind == op::elementwise_kind::convert && e->target == dtype::f32) {
            m.replace_instruction(ins, convert_to(target), inputs, modules, true);
            continue;
        }
        if (!op.traits().accumulates_in_f32) {
            m.replace_instruction(ins, op, inputs, modules, true);
            continue;
        }
        for (instruction_ref& in : inputs)
            if (!in->get_shape().is_tuple() && in->get_shape().type() == target)
                in = m.insert_instruction(ins, convert_to(dtype::f32), {in});
        m.replace_instruction(ins, op, inputs, modules, true);
        if (!ins->get_shape().is_tuple() && ins->get_shape().type() == dtype::f32)
            use[ins] = m.insert_instruction(next_of(m, ins), convert_to(target), {ins});
    }
    const instruction_ref ret = m.get_return();
    if (ret == nullptr) return;
    std::vector<instruction_ref> values = mapped(ret->inputs());
    for (instruction_ref& v : values)
        if (!v->get_shape().is_tuple() && v->get_shape().type() == target)
            v = m.insert_instruction(ret, convert_to(dtype::f32), {v});
    m.replace_instruction(ret, ret->get_operator(), values, {}, true);
}

} // namespace conflux
