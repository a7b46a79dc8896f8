// conflux run MODEL: evaluates the model on given or random inputs and summarises each output.
#include "commands.hpp"
#include "input_loading.hpp"
#include "options.hpp"

#include "conflux/cuda/target.hpp"
#include "conflux/ir/npy.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/util/printable.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <set>
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

// Output names become file names. A name from the model must not leave the directory ('/',
// "..", "."), nor put control characters into a file name (they reach every later `ls`), nor
// exceed what a file system takes (255 bytes, with ".npy" and a suffix after it). Such
// characters become '_'; the caller says when a name was changed.
std::string file_name_for(const std::string& name, std::size_t index) {
    constexpr std::size_t max_stem = 200;
    std::string out = name;
    for (auto& c : out)
        if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
    if (out.size() > max_stem) out = out.substr(0, max_stem) + "_" + std::to_string(index);
    if (out.empty() || out == "." || out == "..") out = "output" + std::to_string(index);
    return out;
}

int run(const run_options& options) {
    const std::string target = resolve_target(options.target, std::cerr);
    auto files = parse_input_files(options.input.files);
    program p = load_model(options.model);
    auto params = bind_inputs(p.main(), files, options.input.seed, std::cerr);
    const auto names = p.main().output_names();

    std::vector<argument> results;
    std::chrono::steady_clock::time_point start, stop;
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
        const std::optional<dtype> precision = precision_of(options.target);
        if (options.optimize || precision)
            run_passes(p.main(),
                       without_passes(target_independent_passes(precision, fuse_attention{}),
                                      options.target.skip_passes));
        start = std::chrono::steady_clock::now();
        results = ref::evaluate(p, params);
        stop = std::chrono::steady_clock::now();
    }

    CONFLUX_ASSERT(names.size() == results.size(), "model returns ", results.size(),
                   " values but names ", names.size());
    for (std::size_t i = 0; i < results.size(); ++i) {
        const shape& s = results[i].get_shape();
        std::cout << printable(names[i]) << ": " << to_string(s.as_standard()) << "  "
                  << summarise(results[i]) << "\n";
    }
    double ms = std::chrono::duration<double, std::milli>(stop - start).count();
    std::cout << "time: " << format_number(ms) << " ms (target " << target << ")\n";

    if (!options.output_dir.empty()) {
        namespace fs = std::filesystem;
        std::error_code ec;
        fs::create_directories(options.output_dir, ec);
        CONFLUX_USER_CHECK(!ec, "--output-dir '", options.output_dir,
                           "': cannot create it: ", ec.message());
        std::set<std::string> used;
        for (std::size_t i = 0; i < results.size(); ++i) {
            std::string base = file_name_for(names[i], i);
            const bool sanitised = base != names[i];
            // Two names may sanitise alike ("a/b" and "a_b"); keep both files.
            const bool taken = used.contains(base);
            while (!used.insert(base).second)
                base += "_" + std::to_string(i);
            auto path = (fs::path(options.output_dir) / (base + ".npy")).string();
            write_npy(path, results[i]);
            std::cout << "wrote " << path;
            if (sanitised)
                std::cout << " (output '" << printable(names[i])
                          << "': its name is not a usable file name as it is)";
            else if (taken)
                std::cout << " (output '" << printable(names[i])
                          << "': another output's file has that name)";
            std::cout << "\n";
        }
    }
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
    return {sub, [options] { return run(*options); }};
}

} // namespace conflux::tool
