// Fuse pointwise: maximal single-output DAGs of elementwise ops (their broadcast/view inputs
// included) become one `pointwise` op owning a submodule whose parameters are named x0, x1, ...
// in order of first use. Precondition: after simplify. Guarantee: same results.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

struct fuse_pointwise {
    std::string name() const { return "fuse_pointwise"; }
    void apply(module& m) const;
};

} // namespace conflux
