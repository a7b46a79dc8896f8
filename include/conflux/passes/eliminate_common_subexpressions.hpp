// Common subexpression elimination: a value computed twice is computed once. Literals of equal
// shape and values become one (exporters write a constant per layer: BERT's mask fill values,
// a tied embedding stored twice), then instructions applying an equal operation to the same
// inputs (BERT's per-layer `where` over the attention mask, which then reads one literal) — twelve
// identical launches become one. Left alone: parameters, the return, instructions owning
// submodules (their modules are not compared) and values the return reads (each output keeps a
// value of its own). Safe at any point of the pipeline; dce removes what it orphans.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

struct eliminate_common_subexpressions {
    std::string name() const { return "cse"; }
    void apply(module& m) const;
};

} // namespace conflux
