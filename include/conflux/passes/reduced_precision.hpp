// Runs an f32 model in f16 or bf16 (conflux --fp16 / --bf16): every f32 parameter and literal is
// converted to `target` where it is used (literals fold to `target` constants in the following
// simplify, so weights are converted at compile time), every op then computes in `target`,
// and the f32 returns are converted back, so the model's inputs and outputs keep their dtype.
// Reductions, softmax, log_softmax and the normalisations compute in f32: their sums are the
// ones that lose most in 16 bits. Those that can read a 16-bit input and compute in f32 inside
// (op trait reads_16bit_input: layer norm with its f32 scale and bias, softmax, the summing
// reductions) get the 16-bit value and give a 16-bit result; the others read f32 copies and
// give f32 results, converted to `target` for their users. Casts to f32 in the model become
// casts to `target`. With narrow_returns (--narrow-outputs) the returns stay in `target`: the
// program gives 16-bit outputs, half the bytes to write (an LM's logits), as a PyTorch model
// made .half() does.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

struct reduced_precision {
    dtype target = dtype::f16;
    bool narrow_returns = false;
    std::string name() const { return "reduced_precision"; }
    void apply(module& m) const;
};

} // namespace conflux
