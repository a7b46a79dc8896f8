// Layout: every 2-D convolution is rewritten to compute in NHWC with KRSC weights (the weights'
// transpose is constant-folded); transposes are inserted at its input and output so the rest of
// the graph is unchanged, and simplify (run after) cancels the inner ones between consecutive
// convolutions. A transpose that survives at a graph output is a layout tail for fuse_gemm.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

struct layout_nhwc {
    std::string name() const { return "layout"; }
    void apply(module& m) const;
};

} // namespace conflux
