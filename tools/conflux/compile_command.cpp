// conflux compile MODEL: runs the target's pass pipeline and prints the compiled program.
#include "commands.hpp"
#include "options.hpp"

#include "conflux/cuda/target.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/util/errors.hpp"
#include "conflux/util/read_file.hpp"

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

namespace conflux::tool {

namespace {

struct compile_options {
    model_options model;
    target_options target;
    bool print_passes = false;
    std::string print_after;
    std::string dump_kernels;
    std::string output;
    bool with_reference = false;
};

std::string model_name(const compile_options& options) {
    return std::filesystem::path(options.model.model).filename().string();
}

void say_saved(const compile_options& options) {
    std::cout << "saved the program to " << options.output << " ("
              << format_byte_size(std::filesystem::file_size(options.output)) << ")\n";
}

int compile(const compile_options& options) {
    CONFLUX_USER_CHECK(!is_saved_program(options.model), "'", options.model.model,
                       "' is a compiled program (.cfx) already; compile takes an ONNX model");
    const std::string target = resolve_target(options.target, std::cerr);
    CONFLUX_USER_CHECK(!options.with_reference || (!options.output.empty() && target == "cuda"),
                       "--with-reference: stores the model beside a cuda program saved with -o");
    // What the target runs.
    const cuda::compile_options cuda_options = to_cuda_options(options.target, std::cerr);
    auto passes = target == "cuda"
                      ? cuda::target_passes(cuda_options)
                      : without_passes(target_independent_passes(std::nullopt, fuse_attention{}),
                                       options.target.skip_passes);
    if (!options.print_after.empty()) {
        bool known = false;
        std::string names;
        for (const auto& ps : passes) {
            known = known || ps.name() == options.print_after;
            names += (names.empty() ? "" : ", ") + ps.name();
        }
        CONFLUX_USER_CHECK(known, "--print-after: no pass named '", options.print_after,
                           "' (the passes are: ", names, ")");
    }
    program p = load_model(options.model);
    if (target == "cuda") {
        // The CUDA target runs the same passes, then lowers and compiles every kernel; no GPU
        // is needed for this.
        if (options.print_passes || !options.print_after.empty()) {
            program traced = load_model(options.model);
            pass_trace trace{.out = &std::cout,
                             .print_passes = options.print_passes,
                             .print_after = options.print_after};
            run_passes(traced.main(), passes, trace);
        }
        cuda::compiled_program compiled = cuda::compile(std::move(p), cuda_options);
        print_tuning_summary(options.target, compiled, std::cerr);
        print_compile_trace(options.target, compiled, std::cout);
        compiled.print(std::cout);
        if (!options.dump_kernels.empty()) {
            const auto sources = compiled.write_sources(options.dump_kernels);
            compiled.write_cubins(options.dump_kernels);
            std::cout << "wrote " << sources.size() << " kernels (.cu and .cubin) to "
                      << options.dump_kernels << "\n";
        }
        const auto& st = compiled.stats();
        std::cout << "compiled " << st.kernels << " kernels for " << st.arch << " in "
                  << st.compile_seconds << " s (" << st.cache_hits << " from the kernel cache)\n";
        if (!options.output.empty()) {
            std::optional<program> reference;
            if (options.with_reference) reference = load_model(options.model);
            save_program(options.output, compiled, model_name(options), cuda_options.precision,
                         reference ? &*reference : nullptr);
            say_saved(options);
        }
        return 0;
    }
    pass_trace trace{.out = &std::cout,
                     .print_passes = options.print_passes,
                     .print_after = options.print_after};
    run_passes(p.main(), passes, trace);
    CONFLUX_USER_CHECK(options.dump_kernels.empty(),
                       "--dump-kernels: the reference target has no kernels (use --target cuda)");
    if (options.print_after.empty()) std::cout << p.to_string();
    if (!options.output.empty()) {
        save_program(options.output, p, model_name(options));
        say_saved(options);
    }
    return 0;
}

} // namespace

command add_compile_command(CLI::App& app) {
    auto options = std::make_shared<compile_options>();
    auto* sub = app.add_subcommand("compile", "Run the pass pipeline and print the program");
    add_model_options(*sub, options->model);
    add_target_options(*sub, options->target);
    sub->add_flag("--print-passes", options->print_passes, "Print each pass's name as it runs");
    sub->add_option("--print-after", options->print_after,
                    "Print the program after every run of this pass (instead of at the end)")
        ->type_name("PASS");
    sub->add_option("--dump-kernels", options->dump_kernels,
                    "Write each kernel's CUDA source (ENTRY.cu) and cubin (ENTRY.cubin) to DIR "
                    "(the entry names are those the program listing shows)")
        ->type_name("DIR");
    sub->add_option("-o,--output", options->output,
                    "Save the compiled program to FILE (.cfx): `conflux run|perf|verify FILE` "
                    "then run it with no compile (no NVRTC, no tuning)")
        ->type_name("FILE");
    sub->add_flag("--with-reference", options->with_reference,
                  "With -o and the cuda target: store the model as imported too, so that "
                  "`conflux verify FILE` can compare with the reference target (the file grows "
                  "by the model's weights)");
    return {sub, [options] { return compile(*options); }};
}

} // namespace conflux::tool
