// Fuse gemm: an anchor (convolution or dot) + the views between it and the `pointwise` op that
// consumes it (a broadcast there is not fused) + that pointwise op + the single-use layout tail
// after it (reshape, transpose, squeeze, unsqueeze, flatten) become one `fused_gemm` op owning a
// submodule. A value of the chain also used outside becomes an extra return (the op's result is
// then a tuple read with get_tuple_elem). Parameters are ordered and named deterministically, so
// the same pattern always yields the same submodule text. Precondition: after fuse_pointwise.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

struct fuse_gemm {
    std::string name() const { return "fuse_gemm"; }
    void apply(module& m) const;
};

} // namespace conflux
