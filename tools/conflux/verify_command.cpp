// conflux verify MODEL: runs the CUDA target and the reference target on the same inputs and
// judges every output (output_comparison.hpp). Exit 0 when all pass, 1 when any fails.
#include "commands.hpp"
#include "conflux/ir/output_comparison.hpp"
#include "input_loading.hpp"
#include "options.hpp"

#include "conflux/cuda/target.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/precision_emulation.hpp"
#include "conflux/passes/reduced_precision.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

namespace conflux::tool {

namespace {

struct verify_options {
    model_options model;
    target_options target;
    input_options input;
};

// The reference run again with the precision that ran modelled: `modelled` rewrites a fresh
// import of the model. Returns each output's relative RMS between the two.
std::vector<double> spread(const std::function<program()>& fresh_model,
                           const ref::parameter_map& params, const std::vector<argument>& reference,
                           const pass& modelled) {
    program p = fresh_model();
    run_passes(p.main(), {modelled});
    const auto values = ref::evaluate(p, params);
    std::vector<double> out;
    for (std::size_t i = 0; i < reference.size(); ++i)
        out.push_back(compare_outputs(values.at(i), reference[i]).relative_rms);
    return out;
}

// How far the precision that ran moves each output on the reference target by itself, so that
// a model that amplifies rounding (deep networks with random weights do, by 1e-2 and more) is
// judged by what that precision does to it, not by a fixed number: --fp16/--bf16 against the
// model converted the same way; TF32 against the model with TF32-rounded operands; a model in
// f16/bf16 against itself computed in f32. Zeros when none applies; a model the modelling
// cannot take keeps the fixed tolerances, with a note saying why.
std::vector<double> precision_noise(const std::function<program()>& fresh_model,
                                    std::optional<dtype> reduced, const ref::parameter_map& params,
                                    const std::vector<argument>& reference, bool tf32_ran) {
    std::vector<double> noise(reference.size(), 0.0);
    const auto widen = [&](const pass& modelled) {
        try {
            const auto s = spread(fresh_model, params, reference, modelled);
            for (std::size_t i = 0; i < noise.size(); ++i)
                noise[i] = std::max(noise[i], s[i]);
        } catch (const user_error& e) {
            std::cerr << "note: " << modelled.name()
                      << ": the precision's effect on the reference was not measured (" << e.what()
                      << "); fixed tolerances apply\n";
        }
    };
    if (reduced)
        widen(reduced_precision{*reduced});
    else if (tf32_ran)
        widen(emulate_tf32{});
    if (std::any_of(reference.begin(), reference.end(), [](const argument& a) {
            const dtype t = a.get_shape().type();
            return t == dtype::f16 || t == dtype::bf16;
        }))
        widen(promote_to_f32{});
    return noise;
}

int verify(const verify_options& options, const CLI::App& command) {
    CONFLUX_USER_CHECK(options.target.target != "ref", "verify compares the cuda target with "
                                                       "the reference target; --target ref "
                                                       "has nothing to compare");
    auto files = parse_input_files(options.input.files);
    // A fresh copy of the model as imported (the reference, and the precision modelling of it),
    // the compiled program, and the reduced precision it was compiled in.
    std::function<program()> fresh_model;
    std::optional<cuda::compiled_program> compiled;
    std::optional<dtype> reduced;
    std::optional<program> reference;
    if (is_saved_program(options.model)) {
        saved_program saved =
            load_saved_program(options.model, options.target, command, std::cerr, true);
        CONFLUX_USER_CHECK(saved.cuda.has_value(),
                           "verify compares the cuda target with the "
                           "reference target; '",
                           options.model.model, "' holds a program for ", saved.target);
        compiled = std::move(*saved.cuda);
        reduced = saved.precision;
        reference = std::move(saved.reference);
        fresh_model = saved.read_reference;
    } else {
        fresh_model = [&options] { return load_model(options.model); };
        reduced = precision_of(options.target);
        compiled = cuda::compile(fresh_model(), to_cuda_options(options.target, std::cerr));
        print_tuning_summary(options.target, *compiled, std::cerr);
        print_compile_trace(options.target, *compiled, std::cout);
    }
    if (!reference) reference = fresh_model();
    auto params = bind_inputs(reference->main(), files, options.input.seed, std::cerr);
    const auto names = reference->main().output_names();
    auto got = compiled->run(params, {.poison = true, .sync_each_step = true});
    const auto want = ref::evaluate(*reference, params);
    CONFLUX_ASSERT(got.size() == want.size(), "cuda gave ", got.size(), " outputs, ref ",
                   want.size());
    // Outputs narrowed to 16 bits (--narrow-outputs) are compared widened to the model's type;
    // any other difference of types stays a mismatch.
    for (std::size_t i = 0; i < got.size(); ++i) {
        const dtype g = got[i].get_shape().type(), w = want[i].get_shape().type();
        if (reduced && g == *reduced && w == dtype::f32)
            got[i] = from_vector(w, got[i].get_shape().lens(), to_vector<double>(got[i]));
    }

    // Each floating output is judged by the precision that ran: 16 bits with --fp16/--bf16, TF32
    // when f32 convolutions or matrix products ran on tensor cores (the default; --exact-fp32
    // keeps f32's tolerance), else its dtype's; and never tighter than twice what that
    // precision does to the output on the reference target (precision_noise).
    std::optional<computed_precision> precision;
    if (reduced)
        precision = dtype_precision(*reduced);
    else if (compiled->stats().tf32_anchors > 0)
        precision = tf32_precision();
    const std::vector<double> noise =
        precision_noise(fresh_model, reduced, params, want, compiled->stats().tf32_anchors > 0);
    bool all = true;
    std::printf("%-24s %-20s %-9s %12s %12s %10s %10s  %s\n", "output", "shape", "precision",
                "rel rms", "max |diff|", "noise", "tolerance", "result");
    for (std::size_t i = 0; i < want.size(); ++i) {
        const dtype type = want[i].get_shape().type();
        const output_comparison c = compare_outputs(got[i], want[i], precision, noise[i]);
        all = all && c.passed;
        std::string verdict = c.passed ? "pass" : "FAIL";
        if (c.non_finite != 0) verdict += " (" + std::to_string(c.non_finite) + " NaN/Inf)";
        if (!is_floating(type) && c.mismatches != 0)
            verdict += " (" + std::to_string(c.mismatches) + " differ)";
        const std::string ran_in = !is_floating(type) ? std::string("exact")
                                   : precision && precision->tolerance > verify_tolerance(type)
                                       ? precision->name
                                       : std::string(to_string(type));
        std::printf("%-24s %-20s %-9s %12.3g %12.3g %10.3g %10.3g  %s\n", names[i].c_str(),
                    to_string(want[i].get_shape().as_standard()).c_str(), ran_in.c_str(),
                    c.relative_rms, c.max_abs_diff, c.noise, c.tolerance, verdict.c_str());
    }
    const auto& st = compiled->stats();
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
    return {sub, [options, sub] { return verify(*options, *sub); }};
}

} // namespace conflux::tool
