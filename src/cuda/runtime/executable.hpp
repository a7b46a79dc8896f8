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

    // See compiled_program::profile.
    profile_result profile(const std::map<std::string, argument>& params,
                           const profile_options& options);

private:
    struct state;
    // One binding of a run: the parameters uploaded, the outputs allocated, and every step's
    // kernel argument pointers resolved, so that the steps can be launched any number of times.
    struct bindings;
    bindings bind(const std::map<std::string, argument>& params);
    // Launches step i of the program on the stream with b's arguments.
    void launch_step(bindings& b, std::size_t i);

    const lowered_program& program_;
    std::unique_ptr<state> state_;
};

} // namespace conflux::cuda
