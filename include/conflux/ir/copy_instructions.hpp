// Copying instructions between modules through a value map: module::split builds its parts by
// copying instructions out of the whole, the fusion passes build each submodule by copying the
// fused instructions out of the main module (and fuse_gemm copies a pointwise submodule's body
// into the fused module); every input is rewired through the map.
#pragma once

#include "conflux/ir/module.hpp"

#include <unordered_map>
#include <vector>

namespace conflux {

// Instruction of the source module -> its copy in the destination module.
using instruction_map = std::unordered_map<const instruction*, instruction_ref>;

// Appends a copy of `ins` (same op and submodules) to `dst`, in front of its return, with every
// input replaced by its entry in `map`, and records the copy in `map`. Every input must already
// be mapped: callers copy in module order after mapping the outside inputs to parameters.
// Literals are copied as literals; a return is copied as `dst`'s return (dst must have none yet).
// Parameters are not copyable: they define a module's interface, which the caller builds.
instruction_ref copy_instruction(module& dst, const instruction* ins, instruction_map& map);

// copy_instruction for each of `instructions`, in the order given; returns the copies.
std::vector<instruction_ref> copy_instructions(module& dst,
                                               const std::vector<instruction_ref>& instructions,
                                               instruction_map& map);

} // namespace conflux
