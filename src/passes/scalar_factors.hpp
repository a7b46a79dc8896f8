// Private to the passes: recognising scalar constants in the shapes the ONNX importer leaves
// them (a one-element literal behind broadcasts), shared by the rewrites that match exporter
// idioms (attention's scale, GELU's constants).
#pragma once

#include "conflux/ir/module.hpp"
#include "conflux/ops/elementwise.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace conflux::passes_detail {

std::optional<op::elementwise_kind> elementwise_kind_of(instruction_ref ins);

// The value of a one-element literal, seen through broadcasts.
std::optional<double> scalar_literal(instruction_ref ins);

// Whether exactly one instruction uses `ins`: an intermediate a matched idiom may absorb.
inline bool single_use(instruction_ref ins) {
    return ins->outputs().size() == 1;
}

// Whether the return reads `ins`: an output keeps a value of its own.
inline bool returned(instruction_ref ins) {
    return std::any_of(ins->outputs().begin(), ins->outputs().end(),
                       [](instruction_ref user) { return user->is_return(); });
}

// x * c, c * x or x / c with c a scalar literal: (x, the factor).
std::optional<std::pair<instruction_ref, double>> scaled_by_scalar(instruction_ref ins);

} // namespace conflux::passes_detail
