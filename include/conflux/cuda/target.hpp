// The CUDA target: compiles a program to generated kernels (NVRTC, no GPU needed) and runs it on
// a GPU. compile() runs the target-independent passes, lowers every instruction to a kernel,
// plans memory and compiles the kernels for one architecture; run() (host values) and
// run_on_device() (caller-owned device memory, no copies) need a device and say
// clearly when there is none.
#pragma once

#include "conflux/ir/program.hpp"

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace conflux::cuda {

// How compile() picks each gemm's perf config when the problem cache has no usable entry:
// none (the heuristic's first), quick (time the heuristic's best few), exhaustive (time every
// candidate). Timing needs a GPU; without one, none.
enum class tune_mode { none, quick, exhaustive };

struct compile_options {
    // "sm_90", ...; empty: the device's architecture, or sm_90 when there is no device.
    std::string arch;
    // Compiled kernels are cached on disk (key: source, options, arch, NVRTC version) so a
    // second compile of the same model skips NVRTC. Empty: the default location
    // ($CONFLUX_KERNEL_CACHE, else the user's cache directory).
    std::optional<std::filesystem::path> kernel_cache_dir;
    bool use_kernel_cache = true;
    unsigned compile_threads = 0; // 0: one per hardware thread
    // Force this perf config on every gemm problem it is valid for (others use the heuristic,
    // and the trace says so); a string that is not a perf config is a user error.
    std::string perf_config;
    // f32 convolutions and matrix products in exact fp32 (FMA) instead of TF32 tensor cores.
    bool exact_fp32 = false;
    // Run an f32 model in f16 or bf16 (reduced_precision pass); inputs and outputs stay f32.
    std::optional<dtype> precision;
    tune_mode tune = tune_mode::quick;
    // The problem cache (an SQLite file) tuned configs are kept in and reused from. Empty: the
    // default ($CONFLUX_PROBLEM_CACHE, else the user's cache directory).
    std::optional<std::filesystem::path> problem_cache_path;
    bool use_problem_cache = true;
    std::function<void(const std::string&)> warn;                      // warnings for the user
    std::function<void(const std::string&)> note;                      // notices (e.g. no GPU)
    std::function<void(std::size_t done, std::size_t total)> progress; // kernels compiled
    // Tuning progress: a status line per step of a problem (`done` false), and one when it is
    // finished (`done` true).
    std::function<void(const std::string& line, bool done)> tuning_status;
};

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

struct compile_stats {
    std::string arch;
    std::size_t kernels = 0;         // distinct kernels
    std::size_t launches = 0;        // kernel launches per run
    std::size_t cache_hits = 0;      // kernels found in the kernel cache
    std::size_t arena_bytes = 0;     // peak of the memory plan
    std::size_t temporary_bytes = 0; // sum of all temporaries (what no reuse would need)
    std::size_t output_bytes = 0;
    std::size_t literal_bytes = 0; // weights and other constants, on the device for the run
    double compile_seconds = 0;
    // Gemm problems (distinct keys): configs reused from the problem cache, tuned on the GPU,
    // or the heuristic's; candidates disqualified for wrong results; seconds spent tuning.
    std::size_t problems = 0, reused = 0, tuned = 0, heuristic = 0, disqualified = 0;
    double tuning_seconds = 0;
};

class compiled_program {
public:
    compiled_program();
    compiled_program(compiled_program&&) noexcept;
    compiled_program& operator=(compiled_program&&) noexcept;
    ~compiled_program();

    const compile_stats& stats() const;
    const std::vector<std::string>& parameter_names() const;
    const std::vector<shape>& parameter_shapes() const;
    const std::vector<std::string>& output_names() const;
    // Per output, its dtype, lens and strides in memory: the layout of run()'s results and of
    // run_on_device's output buffers. Output o takes output_shapes()[o].bytes() bytes.
    const std::vector<shape>& output_shapes() const;

    // Runs on GPU 0 with host arguments bound by parameter name (any strides); returns the
    // outputs as host arguments in the program's output order. A user_error naming the reason
    // when no GPU is usable, or an argument is missing or has the wrong lens or dtype.
    std::vector<argument> run(const std::map<std::string, argument>& params,
                              const run_options& options = {});

    // Uploads the parameters once (checked like run's), runs the program options.warmup times,
    // then times options.repetitions runs: each whole run and each launch in it. Outputs stay
    // on the device. The same user_error as run when no GPU is usable.
    profile_result profile(const std::map<std::string, argument>& params,
                           const profile_options& options = {});

    // Runs on GPU 0 straight on caller-owned device memory, bound by name: no copies, the
    // kernels read the inputs and write the outputs where they are (only the program's
    // temporaries live in its own arena). For callers that keep tensors on the GPU, where run()'s
    // uploads and downloads would cost more than the program.
    // - inputs: one pointer per parameter name, to parameter_shapes()[i].bytes() bytes laid out
    //   as parameter_shapes()[i] says (dense, those strides); only read, so inputs may share
    //   memory with each other.
    // - outputs: one pointer per output name, to output_shapes()[o].bytes() bytes, written in
    //   output_shapes()[o]'s layout; an output must not overlap an input or another output.
    // - memory: from cudaMalloc/cudaMallocAsync on the program's device, or cudaMallocManaged;
    //   16-byte aligned (cudaMalloc gives 256); null only for a tensor of no bytes. Sizes cannot
    //   be checked: a buffer smaller than said is undefined behaviour, as in any CUDA kernel.
    // - the stream and the CUDA graph: see device_run_options.
    // - The program has one arena for its temporaries, so runs of one compiled_program must not
    //   overlap in time: a run still in flight on one stream when another starts on a different
    //   stream (run_on_device on another stream, run(), profile()) races on the arena. Runs queued
    //   on one stream are ordered by it. Concurrent streams need one compiled_program each; a
    //   compiled_program is not thread-safe either. Synchronise before destroying it.
    // A user_error naming the tensor and the reason for: no usable GPU (the same as run's), an
    // unknown or missing name, a null or misaligned pointer, memory that is not device or managed
    // memory (host memory, pinned or not) or belongs to another device, and an output that
    // overlaps an input or another output.
    void run_on_device(const std::map<std::string, const void*>& inputs,
                       const std::map<std::string, void*>& outputs,
                       const device_run_options& options = {});

    // Writes every distinct kernel's cubin to dir (created if missing) as ENTRY.cubin, for
    // cuobjdump/nvdisasm; returns the paths written, in kernel order.
    std::vector<std::filesystem::path> write_cubins(const std::filesystem::path& dir) const;

    // The launch sequence and memory plan, one line per kernel launch.
    void print(std::ostream& os) const;
    // Per fused gemm op: its problem, perf config, and fused / 2-way / 3-way with the reason.
    const std::vector<std::string>& trace() const;
    // Per gemm anchor, the candidate perf configs the heuristic ranked (best first).
    const std::vector<std::vector<std::string>>& anchor_candidates() const;

    struct impl;

private:
    friend compiled_program compile(program p, const compile_options& options);
    std::unique_ptr<impl> impl_;
};

compiled_program compile(program p, const compile_options& options = {});

// 0 when there is no GPU or no driver (never throws), else the number of devices.
int available_devices();
// Why no device is usable ("no CUDA-capable device is detected"), for messages (defined with
// the device queries in src/cuda/runtime/device_info.cpp).
std::string no_device_reason();

} // namespace conflux::cuda
