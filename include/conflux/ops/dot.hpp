// Batched matrix product: A [..., M, K] x B [..., K, N] -> [..., M, N]. Both ranks >= 2; batch
// dims broadcast numpy-style. Any operand strides (a transposed operand is a transpose view).
// Integer inputs accumulate in i64; float inputs in f32 (f64 for f64).
#pragma once

#include "conflux/ir/operation.hpp"

namespace conflux::op {

struct dot {
    std::string name() const { return "dot"; }
    op_traits traits() const { return {.anchor = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const dot&) const = default;
};

} // namespace conflux::op
