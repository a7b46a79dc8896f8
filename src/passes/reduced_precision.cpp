#include "conflux/passes/reduced_precision.hpp"

#include "conflux/ops/elementwise.hpp"
#include "conflux/util/errors.hpp"
#include "value_substitution.hpp"

#include <algorithm>
#include <set>

namespace conflux {

void reduced_precision::apply(module& m) const {
    CONFLUX_ASSERT(target == dtype::f16 || target == dtype::bf16, "reduced_precision to ",
                   to_string(target));
    const auto convert_to = [](dtype t) { return op::make_convert(t); };
    // What the model returns in f32, before the rewrites below change types in place: only
    // those go back to f32 (an output the model itself gives in f16, a Cast at its end, keeps
    // its type).
    std::vector<bool> returned_f32;
    if (const instruction_ref ret = m.get_return())
        for (instruction_ref v : ret->inputs())
            returned_f32.push_back(!v->get_shape().is_tuple() &&
                                   v->get_shape().type() == dtype::f32);
    // What each value's users read instead: its 16-bit version.
    value_substitution use;
    // Values kept in f32 for the f32 work after them: a power (x^2 of activations in the
    // hundreds is past f16's range), and what is computed from such values alone (RMSNorm's
    // mean of squares, + eps, square root, reciprocal). Their users in 16 bits read the 16-bit
    // rounding; f32 work reads the value itself.
    std::set<instruction_ref> wide;
    // The broadcast's input as it was before this pass: it is rebuilt on the 16-bit version.
    const auto broadcast_source = [](instruction_ref b) {
        instruction_ref in = b->inputs()[0];
        if (const auto* c = in->get_operator().get_if<op::elementwise>();
            c != nullptr && c->kind == op::elementwise_kind::convert && !in->inputs().empty())
            in = in->inputs()[0];
        return in;
    };
    // Whether `original` has an f32 value to read: kept wide, an f32 parameter or literal, or a
    // broadcast of one (eps, an exponent).
    const auto has_f32_value = [&](instruction_ref original) {
        if (original->name() == "broadcast") original = broadcast_source(original);
        return wide.contains(original) || ((original->is_param() || original->is_literal()) &&
                                           original->get_shape().type() == dtype::f32);
    };
    // That value, before `at` (a broadcast is made again on the f32 value: the one the module
    // has now broadcasts the 16-bit rounding).
    const auto f32_value = [&](instruction_ref original, instruction_ref at) {
        if (original->name() != "broadcast") return original;
        return m.insert_instruction(at, original->get_operator(), {broadcast_source(original)});
    };
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
        const auto* elementwise = op.get_if<op::elementwise>();
        if (elementwise != nullptr && elementwise->kind == op::elementwise_kind::convert &&
            elementwise->target == dtype::f32) {
            m.replace_instruction(ins, convert_to(target), inputs, modules, true);
            continue;
        }
        const bool power = elementwise != nullptr && elementwise->kind == op::elementwise_kind::pow;
        const bool from_wide =
            std::any_of(ins->inputs().begin(), ins->inputs().end(),
                        [&](instruction_ref in) { return wide.contains(in); }) &&
            (op.traits().accumulates_in_f32 ||
             (elementwise != nullptr &&
              std::all_of(ins->inputs().begin(), ins->inputs().end(), has_f32_value)));
        const bool keep_wide = power || from_wide;
        if (!keep_wide && !op.traits().accumulates_in_f32) {
            m.replace_instruction(ins, op, inputs, modules, true);
            continue;
        }
        if (!keep_wide && op.traits().reads_16bit_input && !inputs.empty() &&
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
        // In f32: 16-bit inputs converted back, or, for a value kept wide, the f32 values
        // themselves.
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            const instruction_ref original = ins->inputs()[i];
            if (keep_wide && has_f32_value(original))
                inputs[i] = f32_value(original, ins);
            else if (!inputs[i]->get_shape().is_tuple() && inputs[i]->get_shape().type() == target)
                inputs[i] = m.insert_instruction(ins, convert_to(dtype::f32), {inputs[i]});
        }
        m.replace_instruction(ins, op, inputs, modules, true);
        if (!ins->get_shape().is_tuple() && ins->get_shape().type() == dtype::f32) {
            if (keep_wide) wide.insert(ins);
            use.replace(ins, m.insert_instruction(next_of(m, ins), convert_to(target), {ins}));
        }
    }
    const instruction_ref ret = m.get_return();
    if (ret == nullptr) return;
    std::vector<instruction_ref> values = use.mapped(ret->inputs());
    if (!narrow_returns)
        for (std::size_t i = 0; i < values.size(); ++i) {
            instruction_ref& v = values[i];
            if (!v->get_shape().is_tuple() && v->get_shape().type() == target && returned_f32[i])
                v = m.insert_instruction(ret, convert_to(dtype::f32), {v});
        }
    m.replace_instruction(ret, ret->get_operator(), values, {}, true);
}

} // namespace conflux
