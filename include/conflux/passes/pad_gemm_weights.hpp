// Constant right-hand operands of matrix products whose rows are not 16-byte aligned (GPT-2's
// 50,257-word output projection) are stored with their rows padded to 16 bytes and read through
// a slice, so the GEMM kernels load them 16 bytes at a time instead of one element at a time.
// The values, and the product, are unchanged; the literal grows by less than 16 bytes a row.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

struct pad_gemm_weights {
    std::string name() const { return "pad_gemm_weights"; }
    void apply(module& m) const;
};

} // namespace conflux
