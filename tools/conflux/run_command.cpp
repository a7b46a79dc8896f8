// conflux run MODEL: evaluates the model on given or random inputs and summarises each output.
#include "commands.hpp"
#include "input_loading.hpp"
#include "options.hpp"
#include "output_files.hpp"

#include "conflux/cuda/target.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/util/printable.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

namespace conflux::tool {

namespace {

struct run_options {
    model_options model;
    target_options target;
    input_options input;
    std::string output_dir;
    bool optimize = false;
};

std::string format_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// "min -0.99 max 1.2 mean 0.013", over the non-NaN values, with the NaN count when there are any.
std::string summarise(const argument& value) {
    const shape& s = value.get_shape();
    if (s.elements() == 0) return "(empty)";
    auto values = to_vector<double>(value);
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    double sum = 0;
    std::size_t nans = 0;
    for (double v : values) {
        if (std::isnan(v)) {
            ++nans;
            continue;
        }
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        sum += v;
    }
    std::ostringstream os;
    if (nans == values.size()) {
        os << "all " << nans << " values NaN";
        return os.str();
    }
    os << "min " << format_number(lo) << "  max " << format_number(hi) << "  mean "
       << format_number(sum / double(values.size() - nans));
    if (nans != 0) os << "  (" << nans << " NaN)";
    return os.str();
}

// The summary of each output and the time, and the .npy files with --output-dir.
void print_results(const run_options& options, const std::vector<std::string>& names,
                   const std::vector<argument>& results,
                   std::chrono::steady_clock::time_point start,
                   std::chrono::steady_clock::time_point stop, const std::string& target) {
    CONFLUX_ASSERT(names.size() == results.size(), "model returns ", results.size(),
                   " values but names ", names.size());
    for (std::size_t i = 0; i < results.size(); ++i) {
        const shape& s = results[i].get_shape();
        std::cout << printable(names[i]) << ": " << to_string(s.as_standard()) << "  "
                  << summarise(results[i]) << "\n";
    }
    double ms = std::chrono::duration<double, std::milli>(stop - start).count();
    std::cout << "time: " << format_number(ms) << " ms (target " << target << ")\n";

    if (!options.output_dir.empty())
        write_output_files(options.output_dir, names, results, std::cout);
}

int run(const run_options& options, const CLI::App& command) {
    auto files = parse_input_files(options.input.files);
    std::vector<argument> results;
    std::vector<std::string> names;
    std::string target;
    std::chrono::steady_clock::time_point start, stop;
    if (is_saved_program(options.model)) {
        saved_program saved = load_saved_program(options.model, options.target, command, std::cerr);
        target = saved.target;
        if (saved.cuda) {
            cuda::compiled_program& compiled = *saved.cuda;
            auto params = bind_inputs(compiled.parameter_names(), compiled.parameter_shapes(),
                                      files, options.input.seed, std::cerr);
            names = compiled.output_names();
            start = std::chrono::steady_clock::now();
            results = compiled.run(params);
        } else {
            const program& p = *saved.reference;
            auto params = bind_inputs(p.main(), files, options.input.seed, std::cerr);
            names = p.main().output_names();
            start = std::chrono::steady_clock::now();
            results = ref::evaluate(p, params);
        }
        stop = std::chrono::steady_clock::now();
        print_results(options, names, results, start, stop, target);
        return 0;
    }
    target = resolve_target(options.target, std::cerr);
    program p = load_model(options.model);
    auto params = bind_inputs(p.main(), files, options.input.seed, std::cerr);
    names = p.main().output_names();
    if (target == "cuda") {
        cuda::compiled_program compiled =
            cuda::compile(std::move(p), to_cuda_options(options.target, std::cerr));
        print_tuning_summary(options.target, compiled, std::cerr);
        print_compile_trace(options.target, compiled, std::cerr);
        start = std::chrono::steady_clock::now();
        results = compiled.run(params);
        stop = std::chrono::steady_clock::now();
    } else {
        // The reference target normally interprets the graph as imported; --optimize
        // interprets it after the target-independent passes, which checks the passes on this
        // model. --fp16/--bf16 convert the model first, so the reference shows their effect.
        const std::optional<reduced_precision> precision = reduced_precision_of(options.target);
        if (options.optimize || precision)
            run_passes(p.main(),
                       without_passes(target_independent_passes(precision, fuse_attention{}),
                                      options.target.skip_passes));
        start = std::chrono::steady_clock::now();
        results = ref::evaluate(p, params);
        stop = std::chrono::steady_clock::now();
    }
    print_results(options, names, results, start, stop, target);
    return 0;
}

} // namespace

command add_run_command(CLI::App& app) {
    auto options = std::make_shared<run_options>();
    auto* sub = app.add_subcommand("run", "Run a model and summarise its outputs");
    add_model_options(*sub, options->model);
    add_target_options(*sub, options->target);
    add_input_options(*sub, options->input);
    sub->add_option("--output-dir", options->output_dir,
                    "Write each output to DIR/<output name>.npy ('/', control characters and the "
                    "names '.' and '..' are replaced, and said so)")
        ->type_name("DIR");
    sub->add_flag("--optimize", options->optimize,
                  "Reference target: run the target-independent passes (simplify, layout, "
                  "fusion) before interpreting");
    return {sub, [options, sub] { return run(*options, *sub); }};
}

} // namespace conflux::tool
