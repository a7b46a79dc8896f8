// conflux verify MODEL: runs the CUDA target and the reference target on the same inputs and
// judges every output (output_comparison.hpp). Exit 0 when all pass, 1 when any fails.
#include "commands.hpp"
#include "conflux/ir/output_comparison.hpp"
#include "input_loading.hpp"
#include "options.hpp"

#include "conflux/cuda/target.hpp"

#include <cstdio>
#include <iostream>
#include <memory>

namespace conflux::tool {

namespace {

struct verify_options {
    model_options model;
    target_options target;
    input_options input;
};

int verify(const verify_options& options) {
    CONFLUX_USER_CHECK(options.target.target != "ref", "verify compares the cuda target with "
                                                       "the reference target; --target ref "
                                                       "has nothing to compare");
    auto files = parse_input_files(options.input.files);
    program reference = load_model(options.model);
    auto params = bind_inputs(reference.main(), files, options.input.seed, std::cerr);
    const auto names = reference.main().output_names();

    cuda::compiled_program compiled =
        cuda::compile(load_model(options.model), to_cuda_options(options.target, std::cerr));
    print_tuning_summary(options.target, compiled, std::cerr);
    print_compile_trace(options.target, compiled, std::cout);
    const auto got = compiled.run(params, {.poison = true, .sync_each_step = true});
    const auto want = ref::evaluate(reference, params);
    CONFLUX_ASSERT(got.size() == want.size(), "cuda gave ", got.size(), " outputs, ref ",
                   want.size());

    // Each floating output is judged by the precision that ran: 16 bits with --fp16/--bf16, TF32
    // when f32 convolutions or matrix products ran on tensor cores (the default; --exact-fp32
    // keeps f32's tolerance), else its dtype's.
    std::optional<computed_precision> precision;
    if (const std::optional<dtype> p = precision_of(options.target))
        precision = dtype_precision(*p);
    else if (compiled.stats().tf32_anchors > 0)
        precision = tf32_precision();
    bool all = true;
    std::printf("%-24s %-20s %-9s %12s %12s %10s  %s\n", "output", "shape", "precision", "rel rms",
                "max |diff|", "tolerance", "result");
    for (std::size_t i = 0; i < want.size(); ++i) {
        const dtype type = want[i].get_shape().type();
        const output_comparison c = compare_outputs(got[i], want[i], precision);
        all = all && c.passed;
        std::string verdict = c.passed ? "pass" : "FAIL";
        if (c.non_finite != 0) verdict += " (" + std::to_string(c.non_finite) + " NaN/Inf)";
        if (!is_floating(type) && c.mismatches != 0)
            verdict += " (" + std::to_string(c.mismatches) + " differ)";
        const std::string ran_in = !is_floating(type) ? std::string("exact")
                                   : precision && precision->tolerance > verify_tolerance(type)
                                       ? precision->name
                                       : std::string(to_string(type));
        std::printf("%-24s %-20s %-9s %12.3g %12.3g %10.3g  %s\n", names[i].c_str(),
                    to_string(want[i].get_shape().as_standard()).c_str(), ran_in.c_str(),
                    c.relative_rms, c.max_abs_diff, c.tolerance, verdict.c_str());
    }
    const auto& st = compiled.stats();
    std::printf("%zu kernels, %zu launches, arena %zu bytes (temporaries total %zu)\n", st.kernels,
                st.launches, st.arena_bytes, st.temporary_bytes);
    std::printf("%s\n", all ? "verify: all outputs pass" : "verify: FAILED");
    return all ? 0 : 1;
}

} // namespace

command add_verify_command(CLI::App& app) {
    auto options = std::make_shared<verify_options>();
    auto* sub = app.add_subcommand(
        "verify", "Run the cuda target and the reference target and compare every output");
    add_model_options(*sub, options->model);
    add_target_options(*sub, options->target);
    add_input_options(*sub, options->input);
    return {sub, [options] { return verify(*options); }};
}

} // namespace conflux::tool
