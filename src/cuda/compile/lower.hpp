// Lowers an optimised program (after the target-independent passes) to kernels and a launch
// sequence for the CUDA target. Views become aliases (never copies); every other instruction
// becomes one generated kernel; an anchor (convolution, dot) becomes a tensor-core gemm kernel
// (gemm/) for the config chosen per lowering_options, or the direct kernel when the generator
// has no problem for it. A fused gemm op is split, until the generator holds epilogues: gemm |
// pointwise when it has no layout tail, gemm | pointwise | layout copy when it has one
// (module::split at the anchor and at find_tail_splits); the last kernel writes the op's own
// outputs in their lens and strides. Every anchor's decision is recorded in the trace.
#pragma once

#include "conflux/ir/program.hpp"
#include "cuda/codegen/gemm/perf_config.hpp"
#include "cuda/compile/lowered_program.hpp"

#include <functional>
#include <string>

namespace conflux::cuda {

struct lowering_options {
    // Forced on every anchor whose problem it is valid for (--perf-config); empty: the
    // heuristic's first valid candidate.
    std::string perf_config;
    gemm_device_limits limits;
    // f32 anchors on the SIMT path (exact fp32 FMA) instead of TF32 tensor cores.
    bool exact_fp32 = false;
    // Anchors through the tensor-core generator; false: the direct kernels only.
    bool use_gemm_generator = true;
};

lowered_program lower_program(program& p, const lowering_options& options = {});

} // namespace conflux::cuda
