// The pass lists, one visible list per target. Everything a target does to a program before
// lowering is read here, in order.
#pragma once

#include "conflux/passes/pass.hpp"

#include <vector>

namespace conflux {

// Simplify, NHWC layout, fusion: what every target runs. The reference target runs these under
// `--optimize` and interprets the result, which checks the passes on any model.
std::vector<pass> target_independent_passes();

} // namespace conflux
