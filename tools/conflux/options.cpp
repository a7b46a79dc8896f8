#include "options.hpp"

#include "conflux/cuda/problem_cache.hpp"
#include "conflux/util/printable.hpp"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <unistd.h>

namespace conflux::tool {

namespace {

dims parse_dim_list(const std::string& text, const std::string& whole) {
    dims lens;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        auto comma = text.find(',', pos);
        auto end = comma == std::string::npos ? text.size() : comma;
        std::size_t v = 0;
        const char* first = text.data() + pos;
        const char* last = text.data() + end;
        auto [ptr, ec] = std::from_chars(first, last, v);
        CONFLUX_USER_CHECK(first != last && ec == std::errc() && ptr == last, "--input-dim '",
                           whole, "': '", std::string(first, last),
                           "' is not a non-negative integer (expected NAME:d0,d1,...)");
        lens.push_back(v);
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return lens;
}

} // namespace

void add_model_options(CLI::App& command, model_options& options) {
    command
        .add_option("MODEL", options.model,
                    "ONNX model file (.onnx), or a program compiled and saved by `conflux compile "
                    "-o` (.cfx)")
        ->required();
    command
        .add_option("--input-dim", options.input_dims,
                    "Full lens of an input with symbolic dims, NAME:d0,d1,... (repeatable)")
        ->type_name("NAME:DIMS");
    options.batch_option = command
                               .add_option("--batch", options.batch,
                                           "Value of every symbolic dim in axis 0 (default 1)")
                               ->check(CLI::PositiveNumber);
}

onnx::import_options to_import_options(const model_options& options) {
    onnx::import_options result;
    for (const auto& spec : options.input_dims) {
        // ONNX names may contain ':' (e.g. "input:0" from TensorFlow); dims never do.
        auto colon = spec.rfind(':');
        CONFLUX_USER_CHECK(colon != std::string::npos && colon != 0, "--input-dim '", spec,
                           "': expected NAME:d0,d1,...");
        std::string name = spec.substr(0, colon);
        CONFLUX_USER_CHECK(!result.input_dims.contains(name), "--input-dim: input '", name,
                           "' is given twice");
        result.input_dims[name] = parse_dim_list(spec.substr(colon + 1), spec);
    }
    if (options.batch_option != nullptr && options.batch_option->count() > 0)
        result.batch = options.batch;
    return result;
}

program load_model(const model_options& options) {
    // import_model reads only a regular file of bounded size, and names the path otherwise.
    return onnx::import_model(options.model, to_import_options(options));
}

bool is_saved_program(const model_options& options) {
    return is_program_file(options.model);
}

saved_program load_saved_program(const model_options& options, const target_options& target,
                                 const CLI::App& command, std::ostream& notes,
                                 bool with_reference) {
    for (const char* name :
         {"--input-dim", "--batch", "--arch", "--perf-config", "--attention-config", "--exact-fp32",
          "--tune", "--fp16", "--bf16", "--narrow-outputs", "--skip-pass", "--optimize",
          "--kernel-cache", "--no-kernel-cache", "--problem-cache", "--trace-compile"}) {
        const CLI::Option* o = command.get_option_no_throw(name);
        CONFLUX_USER_CHECK(o == nullptr || o->count() == 0, name, ": '", options.model,
                           "' is a compiled program (.cfx), compiled already; options that shape "
                           "a compile apply to `conflux compile MODEL.onnx -o FILE.cfx`");
    }
    const auto start = std::chrono::steady_clock::now();
    saved_program saved = load_program(options.model, with_reference);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    CONFLUX_USER_CHECK(target.target == "auto" || target.target == saved.target, "--target ",
                       target.target, ": '", options.model, "' holds a program compiled for ",
                       saved.target);
    if (!target.quiet) {
        notes << "conflux: loaded " << printable(options.model) << " (" << saved.target;
        if (saved.cuda)
            notes << " program for " << saved.cuda->stats().arch << ", "
                  << saved.cuda->stats().kernels << " kernels, " << saved.cuda->stats().launches
                  << " launches";
        else
            notes << " program, " << saved.reference->main().size() << " instructions";
        notes << "; saved by conflux " << saved.header.value("conflux", std::string("?"))
              << " from " << printable(saved.header.value("model", std::string("?"))) << ") in "
              << std::fixed << std::setprecision(1) << ms << " ms\n"
              << std::defaultfloat;
    }
    return saved;
}

void add_input_options(CLI::App& command, input_options& options) {
    command
        .add_option("--input", options.files,
                    "Input value from a .npy or ONNX TensorProto .pb file (repeatable); inputs "
                    "not given get random values")
        ->type_name("NAME=FILE");
    command.add_option("--seed", options.seed, "Seed for the random inputs")->capture_default_str();
}

void add_target_options(CLI::App& command, target_options& options) {
    command
        .add_option("--target", options.target,
                    "Where to run: cuda (generated GPU kernels), ref (the reference "
                    "interpreter), or auto (cuda when a GPU is present, else ref)")
        ->check(CLI::IsMember({"auto", "ref", "cuda"}))
        ->capture_default_str();
    command.add_option("--arch", options.arch,
                       "GPU architecture to compile for, e.g. sm_90 (default: the device's, or "
                       "sm_90 without one)");
    command
        .add_option("--kernel-cache", options.kernel_cache,
                    "Directory of the compiled-kernel cache (default: $CONFLUX_KERNEL_CACHE, "
                    "else ~/.cache/conflux/kernels)")
        ->type_name("DIR");
    command.add_flag("--no-kernel-cache", options.no_kernel_cache,
                     "Compile every kernel with NVRTC, without the kernel cache");
    command
        .add_option("--perf-config", options.perf_config,
                    "Use this perf config for every gemm/conv it is valid for, e.g. "
                    "128x128x32_w2x2_s3_k1 (the others use the heuristic; --trace-compile says "
                    "which)")
        ->type_name("CONFIG");
    command
        .add_option("--attention-config", options.attention_config,
                    "Use this config for every fused attention kernel that can run it, e.g. "
                    "w4_m2_n64, or w8_m1_n64_wgmma on Hopper (the others use the heuristic; "
                    "--dump-kernels shows which)")
        ->type_name("CONFIG");
    command.add_flag("--exact-fp32", options.exact_fp32,
                     "f32 convolutions and matrix products in exact fp32 instead of TF32 "
                     "tensor cores");
    command.add_flag("--trace-compile", options.trace_compile,
                     "Print, per fused gemm op, its problem key, perf config (and where it came "
                     "from) and whether it runs fused or split (2-way/3-way) and why");
    command
        .add_option("--tune", options.tune,
                    "How gemm perf configs are chosen when the problem cache has none: quick "
                    "(time the heuristic's best few on the GPU), exhaustive (time every "
                    "candidate) or none (the heuristic's first); none without a GPU")
        ->check(CLI::IsMember({"none", "quick", "exhaustive"}))
        ->capture_default_str();
    auto* fp16 = command.add_flag("--fp16", options.fp16,
                                  "Run an f32 model in f16 (weights converted at compile time, "
                                  "reductions and softmax in f32; inputs and outputs stay f32)");
    command.add_flag("--bf16", options.bf16, "Run an f32 model in bf16, as --fp16 does in f16")
        ->excludes(fp16);
    command.add_flag("--narrow-outputs", options.narrow_outputs,
                     "With --fp16 or --bf16: give the f32 outputs in f16/bf16 as computed instead "
                     "of converting them back (half the bytes written, as a PyTorch model made "
                     ".half() returns them)");
    add_problem_cache_option(command, options.problem_cache);
    command.add_flag("--quiet", options.quiet, "No tuning progress or summary");
    command
        .add_option("--skip-pass", options.skip_passes,
                    "Leave this pass out of the pipeline (repeatable; --print-passes lists them): "
                    "to find which pass a wrong or slow result comes from")
        ->type_name("NAME");
}

std::string resolve_target(const target_options& options, std::ostream& notes) {
    if (options.target != "auto") return options.target;
    if (cuda::available_devices() > 0) return "cuda";
    notes << "note: no CUDA device (" << cuda::no_device_reason()
          << "); running on the reference target\n";
    return "ref";
}

std::optional<dtype> precision_of(const target_options& options) {
    if (options.fp16) return dtype::f16;
    if (options.bf16) return dtype::bf16;
    return std::nullopt;
}

std::optional<reduced_precision> reduced_precision_of(const target_options& options) {
    const std::optional<dtype> precision = precision_of(options);
    CONFLUX_USER_CHECK(!options.narrow_outputs || precision,
                       "--narrow-outputs: the outputs are narrowed to the precision of --fp16 or "
                       "--bf16, and neither is given");
    if (!precision) return std::nullopt;
    return reduced_precision{*precision, options.narrow_outputs};
}

cuda::compile_options to_cuda_options(const target_options& options, std::ostream& notes) {
    cuda::compile_options c;
    c.arch = options.arch;
    c.use_kernel_cache = !options.no_kernel_cache;
    c.perf_config = options.perf_config;
    c.attention_config = options.attention_config;
    c.exact_fp32 = options.exact_fp32;
    c.skip_passes = options.skip_passes;
    if (!options.kernel_cache.empty()) c.kernel_cache_dir = options.kernel_cache;
    c.warn = [&notes](const std::string& message) { notes << "warning: " << message << "\n"; };
    c.tune = options.tune == "none"         ? cuda::tune_mode::none
             : options.tune == "exhaustive" ? cuda::tune_mode::exhaustive
                                            : cuda::tune_mode::quick;
    if (!options.problem_cache.empty()) c.problem_cache_path = options.problem_cache;
    if (const auto reduced = reduced_precision_of(options)) {
        c.precision = reduced->target;
        c.narrow_outputs = reduced->narrow_returns;
    }
    if (!options.quiet) {
        c.note = [&notes](const std::string& message) { notes << "note: " << message << "\n"; };
        // A live status line on a terminal; elsewhere only the summary after the compile.
        if (::isatty(::fileno(stderr)) != 0)
            c.tuning_status = [](const std::string& line, bool done) {
                std::fprintf(stderr, "\r\033[K%s%s", printable(line).c_str(), done ? "\n" : "");
                std::fflush(stderr);
            };
    }
    return c;
}

void print_tuning_summary(const target_options& options, const cuda::compiled_program& p,
                          std::ostream& os) {
    const cuda::compile_stats& s = p.stats();
    if (options.quiet || s.problems == 0) return;
    os << "tuning: " << s.problems << " gemm problem" << (s.problems == 1 ? "" : "s") << ": "
       << s.tuned << " tuned, " << s.reused << " from the problem cache, " << s.heuristic
       << " by the heuristic";
    if (s.disqualified != 0) os << ", " << s.disqualified << " candidates disqualified";
    os << " (" << std::fixed << std::setprecision(1) << s.tuning_seconds << " s tuning)\n";
    os << std::defaultfloat;
}

void add_problem_cache_option(CLI::App& command, std::string& path) {
    command
        .add_option("--problem-cache", path,
                    "File of tuned perf configs (default: $CONFLUX_PROBLEM_CACHE, else "
                    "~/.cache/conflux/problems.sqlite)")
        ->type_name("PATH");
}

std::filesystem::path resolve_problem_cache_path(const std::string& option) {
    if (!option.empty()) return option;
    auto path = cuda::default_problem_cache_path();
    CONFLUX_USER_CHECK(!path.empty(), "no problem cache path: give --problem-cache, or set "
                                      "CONFLUX_PROBLEM_CACHE, XDG_CACHE_HOME or HOME");
    return path;
}

void print_compile_trace(const target_options& options, const cuda::compiled_program& p,
                         std::ostream& os) {
    if (!options.trace_compile) return;
    for (const auto& line : p.trace())
        os << "trace: " << line << "\n";
}

} // namespace conflux::tool
