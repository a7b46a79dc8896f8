#include "conflux/passes/reduced_precision.hpp"

#include "conflux/ops/elementwise.hpp"
#include "conflux/util/errors.hpp"
#include "value_substitution.hpp"

namespace conflux {

void reduced_precision::apply(module& m) const {
    CONFLUX_ASSERT(target == dtype::f16 || target == dtype::bf16, "reduced_precision to ",
                   to_string(target));
    const auto convert_to = [](dtype t) { return op::make_convert(t); };
    // What each value's users read instead: its 16-bit version.
    value_substitution use;
    for (instruction_ref ins : instructions_in_order(m)) {
        const shape& s = ins->get_shape();
        if (ins->is_param() || ins->is_literal()) {
            if (!s.is_tuple() && s.type() == dtype::f32 && !ins->outputs().empty())
                use.replace(ins, m.insert_instruction(next_of(m, ins), convert_to(target), {ins}));
            continue;
        }
        const operation& op = ins->get_operator();
        std::vector<instruction_ref> inputs = use.mapped(ins->inputs());
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
        if (op.traits().reads_16bit_input && !inputs.empty() &&
            inputs[0]->get_shape().type() == target) {
            // Input 0 as it is; the others in f32: an f32 parameter or literal itself (its
            // values, not their 16-bit rounding), anything else converted back.
            for (std::size_t i = 1; i < inputs.size(); ++i) {
                const instruction_ref original = ins->inputs()[i];
                if ((original->is_param() || original->is_literal()) &&
                    original->get_shape().type() == dtype::f32)
                    inputs[i] = original;
                else if (inputs[i]->get_shape().type() == target)
                    inputs[i] = m.insert_instruction(ins, convert_to(dtype::f32), {inputs[i]});
            }
            m.replace_instruction(ins, op, inputs, modules, true);
            continue;
        }
        for (instruction_ref& in : inputs)
            if (!in->get_shape().is_tuple() && in->get_shape().type() == target)
                in = m.insert_instruction(ins, convert_to(dtype::f32), {in});
        m.replace_instruction(ins, op, inputs, modules, true);
        if (!ins->get_shape().is_tuple() && ins->get_shape().type() == dtype::f32)
            use.replace(ins, m.insert_instruction(next_of(m, ins), convert_to(target), {ins}));
    }
    const instruction_ref ret = m.get_return();
    if (ret == nullptr) return;
    std::vector<instruction_ref> values = use.mapped(ret->inputs());
    for (instruction_ref& v : values)
        if (!v->get_shape().is_tuple() && v->get_shape().type() == target)
            v = m.insert_instruction(ret, convert_to(dtype::f32), {v});
    m.replace_instruction(ret, ret->get_operator(), values, {}, true);
}

} // namespace conflux
