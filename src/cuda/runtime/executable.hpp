// A lowered program loaded on GPU 0: its kernels, literals and arena, ready to run many times.
#pragma once

#include "conflux/cuda/target.hpp"
#include "cuda/compile/lowered_program.hpp"
#include "cuda/runtime/nvrtc_compiler.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace conflux::cuda {

class executable {
public:
    // Loads every kernel, uploads the literals and allocates the arena (throws user_error when
    // device memory runs out).
    executable(const lowered_program& program, const std::vector<compiled_kernel>& binaries);
    ~executable();
    executable(const executable&) = delete;
    executable& operator=(const executable&) = delete;

    // Binds host parameters by name, runs every step on the program's stream, and copies the
    // outputs back (in the layouts lowered_program::output_shapes gives).
    std::vector<argument> run(const std::map<std::string, argument>& params,
                              const run_options& options);

private:
    struct state;
    const lowered_program& program_;
    std::unique_ptr<state> state_;
};

} // namespace conflux::cuda
