// The first step of lowering (docs/ARCHITECTURE.md, "Compiling a fused gemm op"): every fused gemm
// op of the program is cut, before any kernel is chosen, into the parts it may run as. The anchor's
// kernel is offered the part after the anchor as its epilogue; when the chosen perf config cannot
// hold it, the op runs as gemm | pointwise, or, when a return has a layout tail after the
// anchor, as gemm | pointwise | layout copy. The parts are modules of a program of their own, so
// lowering reads the program it lowers without changing it.
#pragma once

#include "conflux/ir/program.hpp"

#include <unordered_map>
#include <vector>

namespace conflux::cuda {

struct fused_op_split {
    instruction_ref anchor = nullptr; // in the fused op's module
    // Empty when the op returns the anchor's value itself (nothing after the anchor); else the
    // anchor's closure and the part after it.
    std::vector<split_part> at_anchor;
    // The 3-way split at the anchor and the layout tails (closure, pointwise, layout copy);
    // empty when no return has a layout tail after the anchor, so a split is 2-way.
    std::vector<split_part> three_way;
};

struct fused_op_splits {
    program parts; // owns every part's module
    std::unordered_map<const instruction*, fused_op_split> by_op;
};

// The splits of every fused gemm op in `m`.
fused_op_splits split_fused_ops(const module& m);

// Walking up from every returned value of a fused module over layout_only ops (reshape,
// transpose, squeeze, unsqueeze, flatten), the values where its pointwise part ends: one per
// return, in return order (a value that is returned directly is its own split point).
std::vector<instruction_ref> find_tail_splits(const module& m);

} // namespace conflux::cuda
