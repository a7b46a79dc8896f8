// Runs an f32 model in f16 or bf16 (conflux --fp16 / --bf16): every f32 parameter and literal is
// converted to `target` where it is used (literals fold to `target` constants in the following
// simplify, so weights are converted at compile time), every op then computes in `target`,
// and the f32 returns are converted back, so the model's inputs and outputs keep their dtype.
// Reductions, softmax, log_softmax and the normalisations read f32 copies of their inputs and
// give f32 results (converted to `target` for their users): their sums are the ones that lose
// most in 16 bits. Casts to f32 in the model become casts to `target`.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

struct reduced_precision {
    dtype target = dtype::f16;
    std::string name() const { return "reduced_precision"; }
    void apply(module& m) const;
};

} // namespace conflux
