// The constant data of a literal instruction, for the importer and the passes that fold or
// rewrite around constants.
#pragma once

#include "conflux/ir/instruction.hpp"

namespace conflux {

// The value of a literal instruction, or nullptr when `ins` is not a literal.
const argument* literal_value(const instruction* ins);

} // namespace conflux
