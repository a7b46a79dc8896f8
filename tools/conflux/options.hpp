// Options that several commands share, and their translation into the library's option structs.
#pragma once

#include "conflux/passes/reduced_precision.hpp"

#include "conflux/cuda/saved_program.hpp"
#include "conflux/cuda/target.hpp"
#include "conflux/onnx/import.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace conflux::tool {

struct model_options {
    std::string model;
    std::vector<std::string> input_dims; // NAME:d0,d1,...
    std::size_t batch = 1;
    CLI::Option* batch_option = nullptr;
};

// MODEL (positional), --input-dim, --batch.
void add_model_options(CLI::App& command, model_options& options);

// Parses --input-dim and --batch; a malformed value is a user_error quoting it.
onnx::import_options to_import_options(const model_options& options);

// Imports the model; a path that is not a regular file is a user_error naming it.
program load_model(const model_options& options);

// --input NAME=FILE (repeatable) and --seed for the inputs not given.
struct input_options {
    std::vector<std::string> files;
    std::uint64_t seed = 0;
};
void add_input_options(CLI::App& command, input_options& options);

struct target_options {
    std::string target = "auto";
    std::string arch;
    std::string kernel_cache;
    bool no_kernel_cache = false;
    std::string perf_config;
    std::string attention_config;
    bool trace_compile = false;
    bool exact_fp32 = false;
    bool fp16 = false, bf16 = false;
    bool narrow_outputs = false; // --narrow-outputs: outputs in f16/bf16, not f32
    std::string tune = "quick";
    std::string problem_cache;
    bool quiet = false;
    std::vector<std::string> skip_passes;
};

// --target auto|ref|cuda, --arch, --kernel-cache, --no-kernel-cache, --perf-config,
// --exact-fp32, --trace-compile, --tune, --problem-cache, --quiet, --skip-pass.
void add_target_options(CLI::App& command, target_options& options);

// True when MODEL names a compiled program file (.cfx, by its signature, whatever its name)
// instead of an ONNX model.
bool is_saved_program(const model_options& options);

// Loads the .cfx that MODEL names, after checking that `command` was given no option that shapes
// a compile (--fp16, --tune, --batch, ...: the program was compiled already, so they would be
// ignored without a word) and that --target, if given, is the file's. Unless `quiet`, says on
// `notes` what was loaded and how long it took. `with_reference`: the model stored beside a cuda
// program too (verify).
saved_program load_saved_program(const model_options& options, const target_options& target,
                                 const CLI::App& command, std::ostream& notes,
                                 bool with_reference = false);

// "cuda" or "ref": auto is cuda when a GPU is usable, else ref (said on `notes`).
std::string resolve_target(const target_options& options, std::ostream& notes);

// f16 or bf16 for --fp16 / --bf16, else none.
std::optional<dtype> precision_of(const target_options& options);

// The reduced_precision pass --fp16 / --bf16 (and --narrow-outputs) ask for, else none;
// --narrow-outputs without either is a user error.
std::optional<reduced_precision> reduced_precision_of(const target_options& options);

// The CUDA compile options the flags ask for; warnings go to `notes`.
cuda::compile_options to_cuda_options(const target_options& options, std::ostream& notes);

// Unless --quiet: one line saying where each gemm's config came from (tuned, problem cache,
// heuristic) and how long tuning took; nothing when the program has no gemm.
void print_tuning_summary(const target_options& options, const cuda::compiled_program& p,
                          std::ostream& os);

// With --trace-compile: each fused gemm op's problem, perf config and fused/2-way/3-way.
void print_compile_trace(const target_options& options, const cuda::compiled_program& p,
                         std::ostream& os);

// --problem-cache PATH: the problem cache file (tuned perf configs).
void add_problem_cache_option(CLI::App& command, std::string& path);

// The --problem-cache value, else the default (CONFLUX_PROBLEM_CACHE, else the per-user cache
// directory); a user_error when none of them gives a path.
std::filesystem::path resolve_problem_cache_path(const std::string& option);

} // namespace conflux::tool
