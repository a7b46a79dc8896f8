// Dead-code elimination: removes every instruction whose value nobody uses (parameters and the
// return stay). Safe at any point of the pipeline.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

struct dce {
    std::string name() const { return "dce"; }
    void apply(module& m) const;
};

} // namespace conflux
