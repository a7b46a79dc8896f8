// Simplify: constant folding (instructions whose inputs are all literals become literals),
// batch-norm folded into the preceding convolution's weights and bias, identity views removed,
// consecutive transposes merged or cancelled, consecutive reshapes merged, transpose/reshape
// pairs that cancel removed, transposes moved through elementwise ops when that lets them cancel,
// pools over the whole image turned into mean / max reductions, a batched product of one matrix
// broadcast over the batch turned into one product of all the rows.
// Runs its rewrites to a fixed point. Precondition: none. Guarantee: same results.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

struct simplify {
    // Larger constant results are left to the runtime, unless no larger than one of their inputs.
    std::size_t max_fold_elements = 1 << 22;
    std::string name() const { return "simplify"; }
    void apply(module& m) const;
};

} // namespace conflux
