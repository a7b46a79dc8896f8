#include "conflux/passes/dce.hpp"

namespace conflux {

void dce::apply(module& m) const {
    // Backwards, so a chain of dead instructions goes in one sweep.
    std::vector<instruction_ref> order;
    for (auto& ins : m)
        order.push_back(&ins);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        auto* ins = *it;
        if (!ins->is_param() && !ins->is_return() && ins->outputs().empty())
            m.remove_instruction(ins);
    }
}

} // namespace conflux
