// Ops that own a submodule, created by the fusion passes. Both are evaluated by running their
// submodule with their inputs bound to its parameters in order, so the reference target checks
// a fused program exactly as it checks the original.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux::op {

// A fused DAG of elementwise ops (plus views of its inputs): one output.
struct pointwise {
    std::string name() const { return "pointwise"; }
    shape compute_shape(const std::vector<shape>& in, const std::vector<const module*>& m) const;
    argument eval(const shape& out, const std::vector<argument>& in,
                  const std::vector<const module*>& m, const eval_context& ctx) const;
    bool operator==(const pointwise&) const = default;
};

// A fused gemm op: params -> [input views] -> anchor (convolution or dot) -> [views] ->
// epilogue (pointwise ops) -> [layout tail] -> return. Several returns (an intermediate also used
// outside) make its result a tuple; the first return is the main output.
struct fused_gemm {
    std::string name() const { return "fused_gemm"; }
    op_traits traits() const { return {.has_anchor_module = true}; }
    shape compute_shape(const std::vector<shape>& in, const std::vector<const module*>& m) const;
    argument eval(const shape& out, const std::vector<argument>& in,
                  const std::vector<const module*>& m, const eval_context& ctx) const;
    bool operator==(const fused_gemm&) const = default;
};

// Shared by both: the inputs must match the submodule's parameters (lens and dtype) in order;
// the result is the return's shape, or a tuple of them when there are several.
shape submodule_result_shape(const std::string& op, const std::vector<shape>& in,
                             const std::vector<const module*>& m);

} // namespace conflux::op
