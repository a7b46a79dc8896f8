// The CUDA target: compiles a program to generated kernels (NVRTC, no GPU needed) and runs it on
// a GPU. compile() runs the target-independent passes, lowers every instruction to a kernel,
// plans memory and compiles the kernels for one architecture; run() (host values) and
// run_on_device() (caller-owned device memory, no copies) need a device and say
// clearly when there is none.
#pragma once

#include "conflux/cuda/devices.hpp"
#include "conflux/cuda/run_options.hpp"
#include "conflux/cuda/tune_mode.hpp"
#include "conflux/ir/program.hpp"
#include "conflux/passes/pass.hpp"

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace conflux::cuda {

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
    // Force this attention kernel config ("w4_m2_n64", attention_kernel.hpp) on every attention
    // op it can run (others use the heuristic; the kernel's source says why); not a config: a
    // user error.
    std::string attention_config;
    // f32 convolutions and matrix products in exact fp32 (FMA) instead of TF32 tensor cores.
    bool exact_fp32 = false;
    // Run an f32 model in f16 or bf16 (reduced_precision pass); inputs and outputs stay f32,
    // unless narrow_outputs: then the outputs are given in `precision` (--narrow-outputs).
    std::optional<dtype> precision;
    bool narrow_outputs = false;
    // Attention the attention kernel takes runs as that one kernel; false keeps every attention
    // as dot, softmax, dot (what the fused kernel is measured against).
    bool fuse_attention = true;
    // Passes left out of the pipeline, by name (`--skip-pass`).
    std::vector<std::string> skip_passes;
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

struct compile_stats {
    std::string arch;
    std::size_t kernels = 0;         // distinct kernels
    std::size_t launches = 0;        // kernel launches per run
    std::size_t cache_hits = 0;      // kernels found in the kernel cache
    std::size_t arena_bytes = 0;     // peak of the memory plan
    std::size_t temporary_bytes = 0; // sum of all temporaries (what no reuse would need)
    std::size_t output_bytes = 0;
    std::size_t literal_bytes = 0; // weights and other constants, on the device for the run
    // f32 convolutions and matrix products that ran on TF32 tensor cores (their inputs rounded
    // to a 10-bit mantissa, as f16's): what verify judges f32 outputs by.
    std::size_t tf32_anchors = 0;
    double compile_seconds = 0;
    // Gemm problems (distinct keys): configs reused from the problem cache, tuned on the GPU,
    // or the heuristic's; candidates disqualified for wrong results; seconds spent tuning.
    std::size_t problems = 0, reused = 0, tuned = 0, heuristic = 0, disqualified = 0;
    double tuning_seconds = 0;
};

// The passes compile() runs before lowering, in order (what `conflux compile --print-passes`
// shows for the CUDA target). Attention is fused where the attention kernel takes its shapes;
// `note` is told of every attention left unfused and why.
std::vector<pass> target_passes(const compile_options& options,
                                std::function<void(const std::string&)> note = {});

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
    // Writes every distinct kernel's CUDA source to dir as ENTRY.cu (the translation unit NVRTC
    // compiled; its includes are the embedded conflux/*.cuh headers), to read what a launch runs.
    std::vector<std::filesystem::path> write_sources(const std::filesystem::path& dir) const;

    // The launch sequence and memory plan, one line per kernel launch.
    void print(std::ostream& os) const;
    // Per fused gemm op: its problem, perf config, and fused / 2-way / 3-way with the reason.
    const std::vector<std::string>& trace() const;
    // Per gemm anchor, the candidate perf configs the heuristic ranked (best first).
    const std::vector<std::vector<std::string>>& anchor_candidates() const;

    struct impl;

private:
    friend compiled_program compile(program p, const compile_options& options);
    friend struct saved_program_access;
    std::unique_ptr<impl> impl_;
};

compiled_program compile(program p, const compile_options& options = {});

} // namespace conflux::cuda
