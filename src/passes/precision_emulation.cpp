#include "conflux/passes/precision_emulation.hpp"

#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/round_mantissa.hpp"
#include "value_substitution.hpp"

#include <algorithm>

namespace conflux {

namespace {

bool is_16_bit_float(dtype t) {
    return t == dtype::f16 || t == dtype::bf16;
}

bool is_16_bit_float(const shape& s) {
    return !s.is_tuple() && is_16_bit_float(s.type());
}

} // namespace

void emulate_tf32::apply(module& m) const {
    std::vector<instruction_ref> anchors;
    for (instruction& ins : m)
        if (ins.get_operator().traits().anchor && ins.get_shape().type() == dtype::f32)
            anchors.push_back(&ins);
    for (instruction_ref ins : anchors) {
        std::vector<instruction_ref> inputs = ins->inputs();
        // Inputs 0 and 1 are the multiplied operands (x and w, A and B) of both anchors.
        for (std::size_t i = 0; i < std::min<std::size_t>(2, inputs.size()); ++i)
            if (inputs[i]->get_shape().type() == dtype::f32)
                inputs[i] = m.insert_instruction(ins, op::round_mantissa{10}, {inputs[i]});
        const std::vector<module*> modules(ins->module_inputs().begin(),
                                           ins->module_inputs().end());
        m.replace_instruction(ins, ins->get_operator(), inputs, modules);
    }
}

void promote_to_f32::apply(module& m) const {
    const instruction_ref ret = m.get_return();
    std::vector<dtype> returned;
    if (ret != nullptr)
        for (instruction_ref v : ret->inputs())
            returned.push_back(v->get_shape().is_tuple() ? dtype::f32 : v->get_shape().type());
    // What each value's users read instead: its f32 version.
    value_substitution use;
    for (instruction_ref ins : instructions_in_order(m)) {
        if (ins->is_param() || ins->is_literal()) {
            if (is_16_bit_float(ins->get_shape()) && !ins->outputs().empty())
                use.replace(ins, m.insert_instruction(next_of(m, ins), op::make_convert(dtype::f32),
                                                      {ins}));
            continue;
        }
        const operation& op = ins->get_operator();
        const std::vector<instruction_ref> inputs = use.mapped(ins->inputs());
        const std::vector<module*> modules(ins->module_inputs().begin(),
                                           ins->module_inputs().end());
        const auto* e = op.get_if<op::elementwise>();
        if (e != nullptr && e->kind == op::elementwise_kind::convert && is_16_bit_float(e->target))
            m.replace_instruction(ins, op::make_convert(dtype::f32), inputs, modules, true);
        else
            m.replace_instruction(ins, op, inputs, modules, true);
    }
    if (ret == nullptr) return;
    std::vector<instruction_ref> values = use.mapped(ret->inputs());
    for (std::size_t i = 0; i < values.size(); ++i)
        if (!values[i]->get_shape().is_tuple() && values[i]->get_shape().type() != returned[i])
            values[i] = m.insert_instruction(ret, op::make_convert(returned[i]), {values[i]});
    m.replace_instruction(ret, ret->get_operator(), values, {}, true);
}

} // namespace conflux
