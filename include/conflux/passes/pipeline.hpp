// The pass lists, one visible list per target. Everything a target does to a program before
// lowering is read here, in order.
#pragma once

#include "conflux/ir/dtype.hpp"
#include "conflux/passes/pass.hpp"

#include <optional>
#include <vector>

namespace conflux {

// Simplify, NHWC layout, fusion: what every target runs. The reference target runs these under
// `--optimize` and interprets the result, which checks the passes on any model. With
// `precision` (f16 or bf16: --fp16 / --bf16) the f32 model is converted to it after the first
// simplify (so batch norms fold in f32 first).
//
// `attention`: whether the target runs scaled-dot-product attention as one op (fuse_attention).
// The reference target does (its op evaluates it exactly); the CUDA target not until its
// attention kernel has been measured on the device (issue 16).
enum class attention_fusion { off, on };
std::vector<pass> target_independent_passes(std::optional<dtype> precision = std::nullopt,
                                            attention_fusion attention = attention_fusion::off);

} // namespace conflux
