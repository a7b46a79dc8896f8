// Lowers an optimised program (after the target-independent passes) to kernels and a launch
// sequence for the CUDA target. Views become aliases (never copies); every other instruction
// becomes one generated kernel; a fused gemm op becomes its anchor's kernel plus one kernel for
// the epilogue and layout tail (split at the anchor with module::split) until the gemm
// generator can hold them; the returns are written to output buffers in their own layouts.
#pragma once

#include "conflux/ir/program.hpp"
#include "cuda/compile/lowered_program.hpp"

namespace conflux::cuda {

lowered_program lower_program(program& p);

} // namespace conflux::cuda
