// Every op of the code base by name: the op that a name and the JSON of its attributes()
// describe, as a saved program holds them. The builtins (@param, @literal, @return) are not
// here: a module makes those itself (add_parameter, add_literal, add_return).
#pragma once

#include "conflux/ir/operation.hpp"

#include <string>
#include <vector>

namespace conflux {

// The op named `name` with `attributes` (an object, as operation::attributes() writes it). An
// unknown name, a missing or ill-typed attribute, or an attribute the op does not have is a
// user_error; its message names the attribute, not the instruction (the caller knows which).
operation make_op(const std::string& name, const nlohmann::json& attributes);

// Whether ops of this (registered) name are applied to submodules (pointwise, fused_gemm): a
// saved program may give submodules to those alone.
bool op_takes_submodules(const std::string& name);

// Every name make_op knows, sorted.
std::vector<std::string> registered_op_names();

} // namespace conflux
