// What a compiled_program holds: shared by the driver that makes one (target.cpp) and the saved
// program files that store and restore one (saved_program.cpp).
#pragma once

#include "conflux/cuda/target.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"
#include "cuda/runtime/executable.hpp"
#include "cuda/runtime/lowered_program.hpp"

#include <memory>
#include <vector>

namespace conflux::cuda {

struct compiled_program::impl {
    lowered_program lowered;
    std::vector<compiled_kernel> binaries;
    compile_stats stats;
    std::unique_ptr<executable> loaded; // created on the first run
    bool from_file = false;             // loaded from a .cfx (no model to run on the CPU)
};

} // namespace conflux::cuda
