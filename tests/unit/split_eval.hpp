// Evaluates the parts of a split module in sequence on the reference target, the way a caller
// rewires them: each part's placeholders take earlier parts' results, the rest the call's
// arguments.
#pragma once

#include "conflux/ref/evaluate.hpp"

#include <map>
#include <vector>

namespace conflux::test {

// `values` gives the argument for each instruction the parts were bound to (the `args` given to
// module::split). Returns the last part's results.
inline std::vector<argument> evaluate_split(const std::vector<split_part>& parts,
                                            const std::map<const instruction*, argument>& values) {
    std::vector<std::vector<argument>> results;
    for (const auto& part : parts) {
        std::vector<argument> args;
        for (const auto& in : part.inputs) {
            if (in.is_placeholder()) {
                CONFLUX_ASSERT(in.part < static_cast<int>(results.size()),
                               "placeholder refers to a later part");
                args.push_back(results.at(in.part).at(in.output));
            } else {
                args.push_back(values.at(in.arg));
            }
        }
        results.push_back(ref::evaluate(*part.mod, args));
    }
    return results.back();
}

// Binds each parameter of `m` (used as its own call argument) to a value.
inline std::map<const instruction*, argument> bind_parameters(const module& m,
                                                              const std::vector<argument>& args) {
    std::map<const instruction*, argument> values;
    auto params = m.parameters();
    for (std::size_t i = 0; i < params.size(); ++i)
        values[params[i]] = args.at(i);
    return values;
}

} // namespace conflux::test
