// Where a fused gemm module is split when a perf config cannot hold all of it (DESIGN.md,
// "Compiling a fused gemm op").
#pragma once

#include "conflux/ir/module.hpp"

#include <functional>
#include <vector>

namespace conflux {

// Walks from `anchor` along single-use users while `can_hold(user)` says the gemm kernel may
// still hold that op; returns the last instruction reached (the anchor itself when none).
instruction_ref find_gemm_split(instruction_ref anchor,
                                const std::function<bool(instruction_ref)>& can_hold);

// Walking up from every returned value over layout_only ops (reshape, transpose, squeeze,
// unsqueeze, flatten), the values where the pointwise part ends: one per return, in return order (a
// value that is returned directly is its own split point).
std::vector<instruction_ref> find_tail_splits(const module& m);

// Accepts only pointwise ops, literals, parameters, the return and views whose input is a
// parameter or literal; otherwise throws internal_error naming the first offending instruction.
void check_pointwise_only(const module& m);

} // namespace conflux
