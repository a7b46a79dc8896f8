// Lowers an optimised program (after the target-independent passes) to kernels and a launch
// sequence for the CUDA target. Views become aliases (never copies); every other instruction
// becomes one generated kernel; an anchor (convolution, dot) becomes a tensor-core gemm kernel
// (gemm/) for the config chosen per lowering_options, or the direct kernel when the generator
// has no problem for it. A fused gemm op is one kernel when its config can_fuse the part after
// the anchor, else split: gemm | pointwise when it has no layout tail, gemm | pointwise | layout
// copy when it has one (module::split at the anchor and at find_tail_splits); the last kernel
// writes the op's own outputs in their lens and strides. Every anchor's decision is recorded in
// the trace.
#pragma once

#include "conflux/ir/program.hpp"
#include "cuda/codegen/gemm/perf_config.hpp"
#include "cuda/runtime/lowered_program.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace conflux::cuda {

struct gemm_problem;
struct epilogue_module;

// One gemm anchor whose config is being chosen, with what it takes to compile the op it belongs
// to on its own (for timing candidates): the fused gemm op (or the anchor alone) and the shapes
// its inputs are bound to.
struct anchor_choice {
    const gemm_problem& problem;
    const std::vector<perf_config>& candidates; // allowed for the problem, heuristic order
    const operation& op;
    const std::vector<module*>& modules;
    const std::vector<shape>& inputs;
    const epilogue_module* epilogue; // the part after the anchor; nullptr for an anchor alone
    const std::string& origin;
};

struct lowering_options {
    // Forced on every anchor whose problem it is valid for (--perf-config); empty: the
    // heuristic's first valid candidate.
    std::string perf_config;
    // Forced on every attention kernel it can run (compile_options::attention_config).
    std::string attention_config;
    gemm_device_limits limits;
    // f32 anchors on the SIMT path (exact fp32 FMA) instead of TF32 tensor cores.
    bool exact_fp32 = false;
    // Anchors through the tensor-core generator; false: the direct kernels only.
    bool use_gemm_generator = true;
    // When set (and no --perf-config applies), picks each anchor's config: tuning and the
    // problem cache (src/cuda/tuning). nullopt: the heuristic's first candidate. Lines it
    // appends to `trace` go to the program's trace.
    std::function<std::optional<cuda::perf_config>(const anchor_choice&,
                                                   std::vector<std::string>& trace)>
        choose_config;
};

lowered_program lower_program(const program& p, const lowering_options& options = {});

} // namespace conflux::cuda
