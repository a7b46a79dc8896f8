// The pass lists, one visible list per target. Everything a target does to a program before
// lowering is read here, in order.
#pragma once

#include "conflux/ir/dtype.hpp"
#include "conflux/passes/fuse_attention.hpp"
#include "conflux/passes/pass.hpp"
#include "conflux/passes/reduced_precision.hpp"

#include <optional>
#include <vector>

namespace conflux {

// Simplify, NHWC layout, split reductions, fusion: what every target runs. The reference target
// runs these under `--optimize` and interprets the result, which checks the passes on any
// model. With `precision` (f16 or bf16: --fp16 / --bf16) the f32 model is converted to it after
// the first simplify (so batch norms fold in f32 first).
//
// `attention`: when given, scaled-dot-product attention becomes one op where the pass's
// `obstacle` allows (the reference target: everywhere, its op evaluates it exactly; the CUDA
// target: the shapes its attention kernel takes).
std::vector<pass>
target_independent_passes(std::optional<reduced_precision> precision = std::nullopt,
                          std::optional<fuse_attention> attention = std::nullopt);

// `passes` without every pass named in `names` (`--skip-pass`: bisecting a wrong answer or a
// slow kernel to one pass). A name that is not in the list is a user error naming the passes.
std::vector<pass> without_passes(std::vector<pass> passes, const std::vector<std::string>& names);

} // namespace conflux
