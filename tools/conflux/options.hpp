// Options that several commands share, and their translation into the library's option structs.
#pragma once

#include "conflux/cuda/target.hpp"
#include "conflux/onnx/import.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
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

// Imports the model, checking first that the file exists so the message is about the path.
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
    bool trace_compile = false;
    bool exact_fp32 = false;
};

// --target auto|ref|cuda, --arch, --kernel-cache, --no-kernel-cache, --perf-config,
// --trace-compile.
void add_target_options(CLI::App& command, target_options& options);

// "cuda" or "ref": auto is cuda when a GPU is usable, else ref (said on `notes`).
std::string resolve_target(const target_options& options, std::ostream& notes);

// The CUDA compile options the flags ask for; warnings go to `notes`.
cuda::compile_options to_cuda_options(const target_options& options, std::ostream& notes);

// With --trace-compile: each fused gemm op's problem, perf config and fused/2-way/3-way.
void print_compile_trace(const target_options& options, const cuda::compiled_program& p,
                         std::ostream& os);

} // namespace conflux::tool
