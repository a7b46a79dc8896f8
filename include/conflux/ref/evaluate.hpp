// The reference target: interprets a module instruction by instruction with each op's reference
// evaluation. It is the ground truth every other target and every pass is checked against.
#pragma once

#include "conflux/ir/program.hpp"

#include <map>
#include <string>
#include <vector>

namespace conflux::ref {

using parameter_map = std::map<std::string, argument>;

// Evaluates `m` with its parameters bound by name. Every parameter must be given with the lens
// and dtype it was declared with (any strides); a missing or mismatched one is a user_error
// naming it. Returns the values of the module's return, in order.
std::vector<argument> evaluate(const module& m, const parameter_map& params);

// Evaluates `m` with `args` bound to its parameters in order (same checks as above). This is how
// submodules and the parts of a split module are run.
std::vector<argument> evaluate(const module& m, const std::vector<argument>& args);

inline std::vector<argument> evaluate(const program& p, const parameter_map& params) {
    return evaluate(p.main(), params);
}

} // namespace conflux::ref
