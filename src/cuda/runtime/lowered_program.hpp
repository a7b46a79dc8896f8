// A program lowered for the CUDA target, before anything touches a GPU: the distinct kernels,
// the launch sequence with every operand bound to memory, and the memory plan. Built by
// lower_program (lower.cpp); run by the executable (src/cuda/runtime/executable.cpp).
#pragma once

#include "conflux/ir/argument.hpp"
#include "cuda/jit/kernel_source.hpp"
#include "cuda/runtime/memory_plan.hpp"

#include <string>
#include <vector>

namespace conflux::cuda {

// Where an operand lives: a program parameter, a literal (uploaded once), or a buffer the
// program allocates (a temporary in the arena, or an output bound at run time).
enum class memory_source { parameter, literal, buffer };

struct operand {
    memory_source source = memory_source::buffer;
    std::size_t index = 0;       // parameter, literal or buffer index
    std::size_t byte_offset = 0; // views (slices) start inside their source
    shape view;                  // lens and strides of the operand in that memory
};

struct buffer {
    std::size_t bytes = 0;
    bool is_output = false;
    std::size_t output_index = 0; // when is_output
    std::size_t first_step = 0;   // lifetime in steps, for the memory plan
    std::size_t last_step = 0;
};

struct kernel_step {
    std::size_t kernel = 0; // index into lowered_program::kernels
    // The step's own grid and block: steps of one kernel may launch it differently (a
    // block-per-row reduction's text does not depend on its number of rows, only its grid does).
    launch_dims launch;
    std::vector<operand> args; // inputs then outputs, as the kernel's parameters
    std::string origin;        // the instruction it came from, for error messages
    // For a gemm op's steps: how it was compiled, e.g. "fused 128x128x32_w2x2_s3_k1",
    // "3-way 64x64x32_w2x2_s3_k2"; empty for other steps.
    std::string gemm;
};

struct lowered_program {
    std::vector<kernel_source> kernels; // distinct kernels (equal code compiled once)
    std::vector<kernel_step> steps;
    std::vector<std::string> parameter_names;
    std::vector<shape> parameter_shapes;
    std::vector<argument> literals;
    std::vector<buffer> buffers;
    std::vector<std::string> output_names;
    std::vector<std::size_t> output_buffers; // per output, the buffer index
    std::vector<shape> output_shapes;        // per output, its layout in that buffer
    memory_plan plan;                        // over the temporaries, indexed like `temporaries`
    std::vector<std::size_t> temporaries;    // buffer indices placed in the arena
    std::vector<std::size_t> arena_offset;   // per buffer (temporaries only meaningful)
    // Per anchor: where it came from, its gemm problem, the perf config and fused / 2-way /
    // 3-way with the reason (what --trace-compile prints).
    std::vector<std::string> trace;
    // Per anchor lowered through the gemm generator: its candidate perf configs, best first.
    std::vector<std::vector<std::string>> anchor_candidates;
    // f32 anchors on TF32 tensor cores (inputs rounded to a 10-bit mantissa), not exact fp32.
    std::size_t tf32_anchors = 0;
};

} // namespace conflux::cuda
