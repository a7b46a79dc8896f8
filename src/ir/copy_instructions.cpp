#include "conflux/ir/copy_instructions.hpp"

#include "conflux/util/errors.hpp"

namespace conflux {

instruction_ref copy_instruction(module& dst, const instruction* ins, instruction_map& map) {
    CONFLUX_ASSERT(!ins->is_param(), "copy_instruction: cannot copy parameter ", ins->name(),
                   " into module ", dst.name());
    CONFLUX_ASSERT(!ins->is_return() || dst.get_return() == nullptr, "copy_instruction: module ",
                   dst.name(), " already has a return");
    std::vector<instruction_ref> inputs;
    inputs.reserve(ins->inputs().size());
    for (auto* in : ins->inputs()) {
        auto it = map.find(in);
        CONFLUX_ASSERT(it != map.end(), "copy_instruction: input ", in->name(), " of ", ins->name(),
                       " has no copy in module ", dst.name());
        inputs.push_back(it->second);
    }
    auto copy = dst.add_instruction(ins->get_operator(), std::move(inputs), ins->module_inputs());
    map[ins] = copy;
    return copy;
}

std::vector<instruction_ref> copy_instructions(module& dst,
                                               const std::vector<instruction_ref>& instructions,
                                               instruction_map& map) {
    std::vector<instruction_ref> copies;
    copies.reserve(instructions.size());
    for (auto* ins : instructions)
        copies.push_back(copy_instruction(dst, ins, map));
    return copies;
}

} // namespace conflux
