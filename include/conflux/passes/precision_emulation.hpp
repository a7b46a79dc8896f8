// Reference-side models of the precision a target ran in, for judging its results
// (`conflux verify`, docs/ARCHITECTURE.md "Verify"). Evaluating a model exactly and through one
// of these passes shows how far the precision alone moves its outputs: a correct target lies
// about that far from the exact answer, a wrong one further. Neither pass is part of a pipeline.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

// The operands of every f32 convolution and matrix product rounded to TF32 (10 mantissa bits,
// to nearest, ties away) as the tensor cores' conversion rounds them; accumulation stays f32.
struct emulate_tf32 {
    std::string name() const { return "emulate_tf32"; }
    void apply(module& m) const;
};

// An f16/bf16 model computed in f32: every 16-bit parameter and literal is widened where it is
// used and casts to 16 bits become casts to f32, so no intermediate result is rounded to 16
// bits; the returns are narrowed back to their dtypes. The inverse of reduced_precision.
struct promote_to_f32 {
    std::string name() const { return "promote_to_f32"; }
    void apply(module& m) const;
};

} // namespace conflux
