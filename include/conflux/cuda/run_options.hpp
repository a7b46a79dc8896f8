// How a compiled program runs and what timing it reports: the options and results of
// compiled_program::run, profile and run_on_device (target.hpp), which the runtime implements.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace conflux::cuda {

struct run_options {
    // Fill every output and temporary with NaN-like bytes (0xff) first, so an element a
    // kernel forgets to write cannot pass a comparison.
    bool poison = false;
    // Synchronise after every kernel, so an asynchronous fault names the instruction.
    bool sync_each_step = false;
};

// How compiled_program::profile times a program.
struct profile_options {
    std::size_t warmup = 5;       // untimed runs first (clocks up, caches and TLBs warm)
    std::size_t repetitions = 20; // timed runs; at least one
    // Time whole runs as replays of one CUDA graph holding every launch (what a deployment
    // would do: one launch per run instead of one per kernel); false: launch by launch.
    bool cuda_graph = true;
};

// How compiled_program::run_on_device runs a program.
struct device_run_options {
    // The cudaStream_t to queue the run on (opaque here so that this header needs no CUDA
    // header). Given: the call queues the work and returns without waiting; the caller
    // synchronises the stream (or orders later work after it) before reading the outputs or
    // freeing the buffers. nullptr: the program's own stream, and the call returns when the run
    // has finished, reporting a fault in it. A gather index out of range of its axis (read from
    // an input at run time) is a user error after a run that waits; a run on the caller's stream
    // does not wait, so it is reported by the program's next run that does.
    void* stream = nullptr;
    // Replay one CUDA graph holding every launch (one launch per run instead of one per kernel).
    // A graph bakes in the buffers' addresses: it is captured the first time a set of addresses
    // is bound and kept for later runs with the same set (the 8 most recently used sets), so a
    // caller alternating between a few buffer sets never re-captures. false: launch kernel by
    // kernel, which also lets a caller capture the launches into a graph of its own (after a
    // first run: that one loads the program onto the GPU, which a capture does not allow).
    bool cuda_graph = true;
};

// One kernel launch of the program, timed on its own.
struct step_profile {
    std::string kernel;   // the kernel's entry name
    std::string origin;   // the instruction it came from, as print() and errors name it
    std::string gemm;     // for a gemm op's launches: "fused CONFIG", "2-way CONFIG", ...
    double median_ms = 0; // over the timed repetitions
};

// Times of whole runs (CUDA events on the program's stream around every launch of a run, runs
// queued back to back) and of each launch, in step order. Percentiles interpolate linearly
// between the nearest ranks, so with few repetitions p99 is close to the slowest run.
struct profile_result {
    double median_ms = 0, p90_ms = 0, p99_ms = 0; // whole runs (graph replays when cuda_graph)
    double eager_median_ms = 0;                   // whole runs launched kernel by kernel
    bool cuda_graph = false;
    std::vector<step_profile> steps; // timed in the kernel-by-kernel runs
    std::size_t repetitions = 0;
};

} // namespace conflux::cuda
