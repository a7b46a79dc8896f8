// For passes that rebuild every instruction of a module once, in order (reduced_precision,
// promote_to_f32): what each value's users read instead of it, so that no op ever sees a mix of
// old and new values mid-way.
#pragma once

#include "conflux/ir/module.hpp"
#include "conflux/util/errors.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace conflux {

class value_substitution {
public:
    void replace(instruction_ref old_value, instruction_ref new_value) {
        use_[old_value] = new_value;
    }
    std::vector<instruction_ref> mapped(std::vector<instruction_ref> inputs) const {
        for (instruction_ref& in : inputs)
            if (auto it = use_.find(in); it != use_.end()) in = it->second;
        return inputs;
    }

private:
    std::map<instruction_ref, instruction_ref> use_;
};

// Every instruction but the return, in order.
inline std::vector<instruction_ref> instructions_in_order(module& m) {
    std::vector<instruction_ref> order;
    for (instruction& ins : m)
        if (!ins.is_return()) order.push_back(&ins);
    return order;
}

// The instruction after `ins`, where a conversion of its value goes.
inline instruction_ref next_of(module& m, instruction_ref ins) {
    auto it = std::find_if(m.begin(), m.end(), [&](const instruction& i) { return &i == ins; });
    CONFLUX_ASSERT(it != m.end() && std::next(it) != m.end(), ins->name(), " has no successor");
    return &*std::next(it);
}

} // namespace conflux
