// A lowered program loaded on GPU 0: its kernels, literals and arena, ready to run many times.
#pragma once

#include "conflux/cuda/run_options.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"
#include "cuda/runtime/lowered_program.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace conflux::cuda {

// The device memory one run reads its parameters from and writes its outputs to, in the
// program's parameter and output order: caller-owned (run_on_device) or uploaded by run().
struct device_pointers {
    std::vector<const void*> parameters;
    std::vector<void*> outputs;
};

// The alignment run_on_device asks of caller memory. Kernels are generated for buffers whose
// base is at least this aligned (cudaMalloc's and the arena's are 256-byte aligned): it is the
// widest access a generated kernel makes (16-byte vector loads and stores, cp.async).
inline constexpr std::size_t device_pointer_alignment = 16;

// Resolves compiled_program::run_on_device's name -> pointer maps into program order and
// checks all that needs no GPU: every name known and given, no null or misaligned pointer for a
// tensor with bytes, no output overlapping an input or another output. Throws user_error naming
// the tensor.
device_pointers resolve_device_pointers(const lowered_program& program,
                                        const std::map<std::string, const void*>& inputs,
                                        const std::map<std::string, void*>& outputs);

class graph_exec;

class executable {
public:
    // Loads every kernel, uploads the literals and allocates the arena (throws user_error when
    // device memory runs out).
    executable(const lowered_program& program, const std::vector<compiled_kernel>& binaries);
    ~executable();
    executable(const executable&) = delete;
    executable& operator=(const executable&) = delete;

    // Binds host parameters by name, runs every step on the program's stream, and copies the
    // outputs back (in the layouts lowered_program::output_shapes gives). The device copies of
    // the parameters and the output buffers are made once and kept, and the steps replayed as
    // one CUDA graph (launched one by one with poison or sync_each_step).
    std::vector<argument> run(const std::map<std::string, argument>& params,
                              const run_options& options);

    // See compiled_program::profile.
    profile_result profile(const std::map<std::string, argument>& params,
                           const profile_options& options);

    // See compiled_program::run_on_device; `memory` comes from resolve_device_pointers, and is
    // checked here to be device or managed memory of this program's device.
    void run_on_device(const device_pointers& memory, const device_run_options& options);

private:
    struct state;
    // Device copies of host parameters and fresh output buffers (run and profile).
    struct device_copies;
    device_copies allocate_copies() const;
    void copy_parameters(const device_copies& copies,
                         const std::map<std::string, argument>& params);
    device_copies upload(const std::map<std::string, argument>& params);
    // After run()'s launches: waits, checks the gather indices, copies the outputs back.
    std::vector<argument> finish_run(const device_copies& copies);
    // Every step's kernel argument pointers resolved for one set of parameter and output
    // addresses, so that the steps can be launched (or captured) any number of times.
    struct bindings;
    bindings bind(const device_pointers& memory) const;
    // Launches step i of the program on stream s with b's arguments.
    void launch_step(bindings& b, std::size_t i, cudaStream_t s);
    // Launches every step in order on s.
    void launch_all(bindings& b, cudaStream_t s);
    // After a synchronised run: a user error naming the instructions whose kernels read a
    // gather or scatter index out of range (their cx_index_out_of_range flags, cleared here).
    void check_index_errors();
    // Every step captured into a CUDA graph with b's arguments, instantiated.
    graph_exec capture(bindings& b);
    // The instantiated graph for memory's addresses: from the cache, or captured and cached.
    const graph_exec& graph_for(const device_pointers& memory);

    const lowered_program& program_;
    std::unique_ptr<state> state_;
};

} // namespace conflux::cuda
