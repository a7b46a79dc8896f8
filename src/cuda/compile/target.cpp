#include "conflux/cuda/target.hpp"

#include "conflux/cuda/problem_cache.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/attention_kernel.hpp"
#include "cuda/compile/compiled_program_impl.hpp"
#include "cuda/jit/compile_kernels.hpp"
#include "cuda/jit/kernel_cache.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"
#include "cuda/lower/lower.hpp"
#include "cuda/runtime/device_info.hpp"
#include "cuda/runtime/executable.hpp"
#include "cuda/tuning/tuner.hpp"

#include <chrono>
#include <fstream>
#include <ostream>

namespace conflux::cuda {

compiled_program::compiled_program() = default;
compiled_program::compiled_program(compiled_program&&) noexcept = default;
compiled_program& compiled_program::operator=(compiled_program&&) noexcept = default;
compiled_program::~compiled_program() = default;

const compile_stats& compiled_program::stats() const {
    return impl_->stats;
}
const std::vector<std::string>& compiled_program::parameter_names() const {
    return impl_->lowered.parameter_names;
}
const std::vector<shape>& compiled_program::parameter_shapes() const {
    return impl_->lowered.parameter_shapes;
}
const std::vector<std::string>& compiled_program::output_names() const {
    return impl_->lowered.output_names;
}
const std::vector<shape>& compiled_program::output_shapes() const {
    return impl_->lowered.output_shapes;
}
const std::vector<std::string>& compiled_program::trace() const {
    return impl_->lowered.trace;
}
const std::vector<std::vector<std::string>>& compiled_program::anchor_candidates() const {
    return impl_->lowered.anchor_candidates;
}

namespace {

std::string choose_arch(const compile_options& options) {
    if (!options.arch.empty()) {
        CONFLUX_USER_CHECK(nvrtc_supports_arch(options.arch), "--arch '", options.arch, "': NVRTC ",
                           nvrtc_version(), " cannot compile for it (expected e.g. sm_90)");
        // sm_90a names the same GPUs as sm_90: the kernels that use its own instructions (wgmma)
        // are compiled for it either way, and the device reports sm_90.
        if (options.arch.size() > 3 && options.arch.back() == 'a')
            return options.arch.substr(0, options.arch.size() - 1);
        return options.arch;
    }
    if (available_devices() > 0) return query_device(0).arch;
    return "sm_90";
}

} // namespace

std::vector<pass> target_passes(const compile_options& options,
                                std::function<void(const std::string&)> note) {
    CONFLUX_USER_CHECK(!options.narrow_outputs || options.precision,
                       "narrow outputs need a reduced precision (--fp16 or --bf16) to narrow to");
    std::optional<reduced_precision> precision;
    if (options.precision)
        precision = reduced_precision{*options.precision, options.narrow_outputs};
    if (!options.fuse_attention)
        return without_passes(target_independent_passes(precision), options.skip_passes);
    return without_passes(
        target_independent_passes(
            precision, fuse_attention{.obstacle = attention_kernel_obstacle, .note = note}),
        options.skip_passes);
}

compiled_program compile(program p, const compile_options& options) {
    const auto start = std::chrono::steady_clock::now();
    compiled_program result;
    result.impl_ = std::make_unique<compiled_program::impl>();
    auto& d = *result.impl_;
    d.stats.arch = choose_arch(options);
    // Checked here, not when an attention kernel is generated: a model without attention would
    // otherwise accept any string.
    CONFLUX_USER_CHECK(options.attention_config.empty() ||
                           parse_attention_config(options.attention_config).has_value(),
                       "--attention-config '", options.attention_config,
                       "' is not an attention config (expected e.g. w4_m2_n64)");
    std::vector<std::string> pass_notes;
    run_passes(p.main(),
               target_passes(options, [&](const std::string& n) { pass_notes.push_back(n); }));
    lowering_options lopts;
    lopts.perf_config = options.perf_config;
    lopts.attention_config = options.attention_config;
    lopts.exact_fp32 = options.exact_fp32;
    lopts.limits.wgmma = arch_has_wgmma(d.stats.arch);
    if (available_devices() > 0) {
        const device_info dev = query_device(0);
        lopts.limits.sm_count = unsigned(dev.sm_count);
        lopts.limits.shared_per_block = dev.shared_per_block_optin;
        lopts.limits.shared_per_sm = dev.shared_per_sm;
    }
    std::optional<kernel_cache> cache;
    if (options.use_kernel_cache) cache.emplace(options.kernel_cache_dir, options.warn);
    std::optional<problem_cache> problems;
    const std::filesystem::path problems_path =
        options.problem_cache_path.value_or(default_problem_cache_path());
    if (options.use_problem_cache && !problems_path.empty())
        problems.emplace(problem_cache::open(problems_path, options.warn));
    tuner_options topts;
    topts.mode = options.tune;
    if (topts.mode != tune_mode::none && available_devices() == 0) {
        topts.mode = tune_mode::none;
        if (options.note)
            options.note("no CUDA device (" + no_device_reason() +
                         "): not tuning, configs come from the problem cache or the heuristic");
    }
    topts.arch = d.stats.arch;
    topts.limits = lopts.limits;
    topts.exact_fp32 = options.exact_fp32;
    topts.cache = problems ? &*problems : nullptr;
    topts.kernels = cache ? &*cache : nullptr;
    topts.compile_threads = options.compile_threads;
    topts.warn = options.warn;
    topts.status = options.tuning_status;
    tuner configs(topts);
    lopts.choose_config = [&](const anchor_choice& c, std::vector<std::string>& trace) {
        return configs.choose(c, trace);
    };
    d.lowered = lower_program(p, lopts);
    d.lowered.trace.insert(d.lowered.trace.begin(), pass_notes.begin(), pass_notes.end());

    compile_kernels_options copts;
    copts.arch = d.stats.arch;
    copts.cache = cache ? &*cache : nullptr;
    copts.threads = options.compile_threads;
    copts.progress = options.progress;
    d.binaries = compile_kernels(d.lowered.kernels, copts);

    const tuning_summary& t = configs.summary();
    d.stats.problems = t.problems;
    d.stats.reused = t.reused;
    d.stats.tuned = t.tuned;
    d.stats.heuristic = t.heuristic;
    d.stats.disqualified = t.disqualified;
    d.stats.tuning_seconds = t.seconds;
    d.stats.kernels = d.lowered.kernels.size();
    d.stats.launches = d.lowered.steps.size();
    d.stats.tf32_anchors = d.lowered.tf32_anchors;
    d.stats.cache_hits = cache ? cache->hits() : 0;
    d.stats.arena_bytes = d.lowered.plan.arena_bytes;
    d.stats.temporary_bytes = d.lowered.plan.total_bytes;
    for (std::size_t b : d.lowered.output_buffers)
        d.stats.output_bytes += d.lowered.buffers[b].bytes;
    for (const argument& lit : d.lowered.literals)
        d.stats.literal_bytes += lit.get_shape().bytes();
    d.stats.compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

namespace {

// The program loaded on GPU 0, loading it on first use; a user_error when no GPU is usable or
// the program was compiled for another architecture.
executable& loaded(compiled_program::impl& d) {
    if (!d.loaded) {
        CONFLUX_USER_CHECK(available_devices() > 0, "no CUDA device: ", cuda::no_device_reason(),
                           ". The program was compiled for ", d.stats.arch, " (", d.stats.kernels,
                           " kernels); ",
                           d.from_file ? "run the ONNX model it was compiled from with --target ref"
                                       : "use --target ref",
                           " to run it on the CPU");
        const device_info dev = query_device(0);
        CONFLUX_USER_CHECK(dev.arch == d.stats.arch, "the program was compiled for ", d.stats.arch,
                           " but device 0 (", dev.name, ") is ", dev.arch, "; compile with --arch ",
                           dev.arch, " or leave --arch out");
        d.loaded = std::make_unique<executable>(d.lowered, d.binaries);
    }
    return *d.loaded;
}

} // namespace

std::vector<argument> compiled_program::run(const std::map<std::string, argument>& params,
                                            const run_options& options) {
    return loaded(*impl_).run(params, options);
}

profile_result compiled_program::profile(const std::map<std::string, argument>& params,
                                         const profile_options& options) {
    return loaded(*impl_).profile(params, options);
}

void compiled_program::run_on_device(const std::map<std::string, const void*>& inputs,
                                     const std::map<std::string, void*>& outputs,
                                     const device_run_options& options) {
    // Names, null pointers and overlaps first: they need no GPU.
    const device_pointers memory = resolve_device_pointers(impl_->lowered, inputs, outputs);
    loaded(*impl_).run_on_device(memory, options);
}

namespace {

void write_file(const std::filesystem::path& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    CONFLUX_USER_CHECK(bool(out), "cannot write ", path.string());
}

void make_directory(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    CONFLUX_USER_CHECK(!ec, "cannot create directory ", dir.string(), ": ", ec.message());
}

} // namespace

std::vector<std::filesystem::path>
compiled_program::write_cubins(const std::filesystem::path& dir) const {
    make_directory(dir);
    std::vector<std::filesystem::path> written;
    for (const compiled_kernel& k : impl_->binaries) {
        written.push_back(dir / (k.entry + ".cubin"));
        write_file(written.back(), std::string_view(k.cubin.data(), k.cubin.size()));
    }
    return written;
}

std::vector<std::filesystem::path>
compiled_program::write_sources(const std::filesystem::path& dir) const {
    make_directory(dir);
    std::vector<std::filesystem::path> written;
    for (const kernel_source& k : impl_->lowered.kernels) {
        written.push_back(dir / (k.entry + ".cu"));
        write_file(written.back(), k.code);
    }
    return written;
}

void compiled_program::print(std::ostream& os) const {
    const auto& l = impl_->lowered;
    os << "cuda program for " << impl_->stats.arch << ": " << l.kernels.size() << " kernels, "
       << l.steps.size() << " launches\n";
    auto where = [&](const operand& o) {
        switch (o.source) {
        case memory_source::parameter:
            return "param " + l.parameter_names[o.index];
        case memory_source::literal:
            return "literal " + std::to_string(o.index);
        case memory_source::buffer:
            break;
        }
        const buffer& b = l.buffers[o.index];
        if (b.is_output) return "output " + l.output_names[b.output_index];
        return "arena+" + std::to_string(l.arena_offset[o.index]);
    };
    for (const kernel_step& s : l.steps) {
        const kernel_source& k = l.kernels[s.kernel];
        os << "  " << k.entry << " <<<" << s.launch.grid[0] << "x" << s.launch.grid[1] << "x"
           << s.launch.grid[2] << ", " << s.launch.block[0] << ">>>  " << s.origin;
        if (!s.gemm.empty()) os << "  [" << s.gemm << "]";
        os << "\n     ";
        for (std::size_t i = 0; i < s.args.size(); ++i) {
            const operand& o = s.args[i];
            os << (i < k.inputs ? " in " : " out ") << where(o);
            if (o.byte_offset != 0) os << "+" << o.byte_offset;
            os << " " << to_string(o.view) << ";";
        }
        os << "\n";
    }
    os << "memory plan: arena " << l.plan.arena_bytes << " bytes for " << l.temporaries.size()
       << " temporaries totalling " << l.plan.total_bytes << " bytes\n";
}

} // namespace conflux::cuda
