// The arithmetic of one elementwise op as CUDA text over the helpers of conflux/math.cuh.
#pragma once

#include "conflux/ops/elementwise.hpp"

#include <string>
#include <vector>

namespace conflux::cuda::index {

// The expression computing `e` from `args`, its inputs already widened to the compute type of
// `value_type` (the inputs' dtype). Its type is that compute type, or bool for the kinds that
// produce bool; for convert it is the widened input (the narrowing store converts). `where`
// selects storage values and is not handled here.
std::string elementwise_expression(const op::elementwise& e, dtype value_type,
                                   const std::vector<std::string>& args);

} // namespace conflux::cuda::index
