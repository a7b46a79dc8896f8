// conflux perf MODEL: compiles for the GPU (tuning per --tune and the problem cache), then times
// the whole program and each kernel launch with CUDA events after warm-up, on random or given
// inputs.
#include "commands.hpp"
#include "input_loading.hpp"
#include "options.hpp"
#include "output_files.hpp"

#include "conflux/cuda/target.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <utility>

namespace conflux::tool {

namespace {

struct perf_options {
    model_options model;
    target_options target;
    input_options input;
    std::size_t iterations = 50;
    std::size_t warmup = 10;
    std::size_t top = 20;
    bool no_graph = false;
    std::string output_dir;
};

// "gemm_fused" from "cx_gemm_fused_0123456789ab": the kind the lowering named the kernel by.
std::string kind_of(const std::string& entry) {
    std::string k = entry.rfind("cx_", 0) == 0 ? entry.substr(3) : entry;
    const auto last = k.rfind('_');
    return last == std::string::npos ? k : k.substr(0, last);
}

// The program to time, loaded from a .cfx or compiled, and its inputs.
std::pair<cuda::compiled_program, ref::parameter_map>
program_and_inputs(const perf_options& options, const CLI::App& command) {
    auto files = parse_input_files(options.input.files);
    if (is_saved_program(options.model)) {
        saved_program saved = load_saved_program(options.model, options.target, command, std::cerr);
        CONFLUX_USER_CHECK(saved.cuda.has_value(), "perf times the cuda target; '",
                           options.model.model, "' holds a program for ", saved.target);
        auto params = bind_inputs(saved.cuda->parameter_names(), saved.cuda->parameter_shapes(),
                                  files, options.input.seed, std::cerr);
        return {std::move(*saved.cuda), std::move(params)};
    }
    program model = load_model(options.model);
    auto params = bind_inputs(model.main(), files, options.input.seed, std::cerr);
    cuda::compiled_program compiled =
        cuda::compile(std::move(model), to_cuda_options(options.target, std::cerr));
    print_tuning_summary(options.target, compiled, std::cerr);
    print_compile_trace(options.target, compiled, std::cout);
    return {std::move(compiled), std::move(params)};
}

int perf(const perf_options& options, const CLI::App& command) {
    CONFLUX_USER_CHECK(options.target.target != "ref",
                       "perf times the cuda target; --target ref has no kernels to time");
    auto [compiled, params] = program_and_inputs(options, command);
    const cuda::profile_result r = compiled.profile(
        params, cuda::profile_options{options.warmup, options.iterations, !options.no_graph});

    const auto& st = compiled.stats();
    std::size_t batch = 1;
    if (!compiled.parameter_shapes().empty() && !compiled.parameter_shapes()[0].lens().empty())
        batch = compiled.parameter_shapes()[0].lens()[0];
    std::printf("latency: median %.4f ms, p90 %.4f ms, p99 %.4f ms (%zu runs after %zu warm-up, "
                "%s)\n",
                r.median_ms, r.p90_ms, r.p99_ms, r.repetitions, options.warmup,
                r.cuda_graph ? "one CUDA graph per run" : "kernel by kernel");
    if (r.cuda_graph) std::printf("without the CUDA graph: median %.4f ms\n", r.eager_median_ms);
    std::printf("throughput: %.1f per second at batch %zu\n", 1000.0 * double(batch) / r.median_ms,
                batch);
    std::printf("device memory: %.1f MB (weights %.1f MB, arena %.1f MB, outputs %.1f MB); %zu "
                "kernels, %zu launches\n",
                double(st.literal_bytes + st.arena_bytes + st.output_bytes) / 1e6,
                double(st.literal_bytes) / 1e6, double(st.arena_bytes) / 1e6,
                double(st.output_bytes) / 1e6, st.kernels, st.launches);
    double total = 0;
    for (const auto& s : r.steps)
        total += s.median_ms;
    std::vector<const cuda::step_profile*> order;
    for (const auto& s : r.steps)
        order.push_back(&s);
    std::stable_sort(order.begin(), order.end(),
                     [](auto* a, auto* b) { return a->median_ms > b->median_ms; });
    std::printf("%7s %10s  %-20s %-34s %s\n", "share", "ms", "kind", "gemm", "instruction");
    for (std::size_t i = 0; i < order.size() && i < options.top; ++i)
        std::printf("%6.1f%% %10.4f  %-20s %-34s %s\n", 100.0 * order[i]->median_ms / total,
                    order[i]->median_ms, kind_of(order[i]->kernel).c_str(),
                    order[i]->gemm.empty() ? "-" : order[i]->gemm.c_str(),
                    order[i]->origin.c_str());
    if (order.size() > options.top)
        std::printf("(%zu more launches; -t/--top N shows more)\n", order.size() - options.top);
    // Where the time goes as a whole: the per-launch list hides a kind made of many short
    // launches (a reduction per block of a CNN).
    std::map<std::string, std::pair<double, std::size_t>> by_kind;
    for (const auto& s : r.steps) {
        auto& [ms, launches] = by_kind[kind_of(s.kernel)];
        ms += s.median_ms;
        ++launches;
    }
    std::vector<std::pair<std::string, std::pair<double, std::size_t>>> kinds(by_kind.begin(),
                                                                              by_kind.end());
    std::stable_sort(kinds.begin(), kinds.end(),
                     [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    std::printf("by kind (ms, launches, share):");
    for (std::size_t i = 0; i < kinds.size(); ++i)
        std::printf("%s %s %.4f (%zu, %.1f%%)", i == 0 ? "" : ";", kinds[i].first.c_str(),
                    kinds[i].second.first, kinds[i].second.second,
                    100.0 * kinds[i].second.first / total);
    std::printf("\n");
    // The outputs of one more run on the same inputs: a benchmark checks what it timed without
    // compiling the model a second time in `conflux run`.
    if (!options.output_dir.empty()) {
        std::fflush(stdout);
        write_output_files(options.output_dir, compiled.output_names(), compiled.run(params),
                           std::cout);
    }
    return 0;
}

} // namespace

command add_perf_command(CLI::App& app) {
    auto options = std::make_shared<perf_options>();
    auto* sub = app.add_subcommand(
        "perf", "Compile for the GPU, then time the program and each kernel (CUDA events)");
    add_model_options(*sub, options->model);
    add_target_options(*sub, options->target);
    add_input_options(*sub, options->input);
    sub->add_option("-n,--iterations", options->iterations, "Timed runs")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    sub->add_option("--warmup", options->warmup, "Untimed runs first")->capture_default_str();
    sub->add_option("-t,--top", options->top, "Kernel launches listed, slowest first")
        ->capture_default_str();
    sub->add_flag("--no-cuda-graph", options->no_graph,
                  "Time runs launched kernel by kernel instead of as one CUDA graph replay");
    sub->add_option("--output-dir", options->output_dir,
                    "After timing, run once more and write each output to DIR/<output name>.npy, "
                    "as `conflux run --output-dir` does")
        ->type_name("DIR");
    return {sub, [options, sub] { return perf(*options, *sub); }};
}

} // namespace conflux::tool
