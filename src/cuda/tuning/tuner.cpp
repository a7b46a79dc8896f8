#include "cuda/tuning/tuner.hpp"

#include "conflux/cuda/problem_cache.hpp"
#include "conflux/ir/builtin_ops.hpp"
#include "conflux/ir/output_comparison.hpp"
#include "conflux/ir/random_argument.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/gemm/fused_epilogue.hpp"
#include "cuda/codegen/gemm/gemm_problem.hpp"
#include "cuda/jit/compile_kernels.hpp"
#include "cuda/runtime/executable.hpp"
#include "cuda/tuning/problem_key.hpp"

#include <chrono>
#include <cstdio>
#include <limits>

namespace conflux::cuda {

namespace {

using clock_type = std::chrono::steady_clock;

// The op of c on its own: its inputs are parameters x0, x1, ... of the shapes it is bound to.
program standalone(const anchor_choice& c) {
    program p;
    module& m = p.main();
    std::vector<instruction_ref> params;
    for (std::size_t i = 0; i < c.inputs.size(); ++i)
        params.push_back(m.add_parameter("x" + std::to_string(i), c.inputs[i]));
    instruction_ref r = m.add_instruction(c.op, params, c.modules);
    std::vector<instruction_ref> returns;
    if (r->get_shape().is_tuple()) {
        for (std::size_t i = 0; i < r->get_shape().sub_shapes().size(); ++i)
            returns.push_back(m.add_instruction(op::get_tuple_elem{i}, {r}));
    } else {
        returns.push_back(r);
    }
    m.add_return(returns);
    return p;
}

// A lowered and compiled candidate (or the reference), ready to load.
struct built {
    lowered_program lowered;
    std::vector<compiled_kernel> binaries;
};

std::string milliseconds(double ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f ms", ms);
    return buf;
}

} // namespace

tuner::tuner(tuner_options options) : options_(std::move(options)) {}

std::optional<perf_config> tuner::choose(const anchor_choice& c, std::vector<std::string>& trace) {
    const std::string fusion =
        c.epilogue ? fusion_signature(*c.epilogue->mod, c.epilogue->inputs, c.epilogue->outputs)
                   : "none";
    const problem_key key =
        make_problem_key(c.problem, fusion, options_.arch, options_.limits.sm_count);
    if (auto it = chosen_.find(key.slot()); it != chosen_.end()) {
        trace.push_back("key " + key.text() + ": as chosen above");
        return it->second;
    }
    ++summary_.problems;
    trace.push_back("key " + key.text());
    std::optional<perf_config> result;
    if (options_.cache != nullptr) {
        if (auto entry = options_.cache->find(key.slot())) {
            std::string why;
            const bool stale =
                entry->device != key.device || entry->generator_version != key.generator_version;
            if (stale)
                why = "it was tuned for " + entry->device + " by generator " +
                      entry->generator_version;
            else
                why = check_cached(entry->config, c);
            if (why.empty()) {
                result = parse_perf_config(entry->config);
                ++summary_.reused;
                trace.push_back("problem cache: " + entry->config);
            } else {
                const std::string message = "problem cache entry '" + entry->config + "' for " +
                                            key.text() + " is not used: " + why;
                // A newer generator makes every entry of the older one stale: one warning per
                // device and generator that tuned them, not one per problem (a ResNet-50 cache
                // printed 29); --trace-compile names each.
                const std::string source = entry->device + " " + entry->generator_version;
                if (options_.warn && (!stale || stale_sources_.insert(source).second))
                    options_.warn(stale ? "problem cache entries tuned for " + entry->device +
                                              " by generator " + entry->generator_version +
                                              " are not used (this is " + key.device + ", " +
                                              key.generator_version +
                                              "); --trace-compile names each. First: " + message
                                        : message);
                trace.push_back(message);
                if (options_.mode == tune_mode::none) {
                    // Nothing measured replaces it; a stale entry would warn on every compile.
                    options_.cache->erase(key.slot());
                    trace.push_back("problem cache: entry removed");
                }
            }
        }
    }
    if (!result && options_.mode != tune_mode::none) result = tune(c, key, trace);
    if (!result) {
        ++summary_.heuristic;
        trace.push_back("heuristic: " + to_string(c.candidates.front()));
    }
    chosen_[key.slot()] = result;
    return result;
}

std::string tuner::check_cached(const std::string& text, const anchor_choice& c) {
    const auto config = parse_perf_config(text);
    if (!config) return "it is not a perf config";
    std::string why;
    if (options_.exact_fp32 && c.problem.type == dtype::f32 && config->rounds_f32_to_tf32())
        return "--exact-fp32 needs a _simt or depthwise config for f32";
    if (!valid(*config, c.problem, &why, options_.limits)) return "not valid here: " + why;
    try {
        program p = standalone(c);
        lowering_options lo;
        lo.perf_config = text;
        lo.limits = options_.limits;
        lo.exact_fp32 = options_.exact_fp32;
        const lowered_program lowered = lower_program(p, lo);
        compile_kernels_options co;
        co.arch = options_.arch;
        co.cache = options_.kernels;
        co.threads = options_.compile_threads;
        compile_kernels(lowered.kernels, co);
    } catch (const std::exception& e) {
        return std::string("its kernels do not compile: ") + e.what();
    }
    return "";
}

std::optional<perf_config> tuner::tune(const anchor_choice& c, const problem_key& key,
                                       std::vector<std::string>& trace) {
    const auto start = clock_type::now();
    std::vector<perf_config> configs = c.candidates;
    if (options_.mode == tune_mode::quick && configs.size() > options_.quick_candidates)
        configs.resize(options_.quick_candidates);
    const std::string& short_name = key.family;
    auto status = [&](const std::string& line, bool done) {
        if (options_.status) options_.status(line, done);
    };
    status("tuning " + c.origin + ": compiling " + std::to_string(configs.size()) + " configs",
           false);

    // Lower every candidate and the reference, then compile all their kernels at once.
    std::vector<built> builds(configs.size() + 1);
    std::vector<kernel_source> sources;
    for (std::size_t i = 0; i <= configs.size(); ++i) {
        program p = standalone(c);
        lowering_options lo;
        lo.limits = options_.limits;
        lo.exact_fp32 = options_.exact_fp32;
        if (i < configs.size())
            lo.perf_config = to_string(configs[i]);
        else
            lo.use_gemm_generator = false; // the direct kernels: the trusted reference
        builds[i].lowered = lower_program(p, lo);
        sources.insert(sources.end(), builds[i].lowered.kernels.begin(),
                       builds[i].lowered.kernels.end());
    }
    compile_kernels_options co;
    co.arch = options_.arch;
    co.cache = options_.kernels;
    co.threads = options_.compile_threads;
    std::vector<std::string> failed(builds.size()); // why a build's kernels did not compile
    try {
        std::vector<compiled_kernel> binaries = compile_kernels(sources, co);
        std::size_t next = 0;
        for (auto& b : builds) {
            b.binaries.assign(binaries.begin() + std::ptrdiff_t(next),
                              binaries.begin() + std::ptrdiff_t(next + b.lowered.kernels.size()));
            next += b.lowered.kernels.size();
        }
    } catch (const std::exception&) {
        // One failure stops the batch: compile each build on its own to find which.
        for (std::size_t i = 0; i < builds.size(); ++i) {
            try {
                builds[i].binaries = compile_kernels(builds[i].lowered.kernels, co);
            } catch (const std::exception& e) {
                failed[i] = e.what();
            }
        }
    }
    if (!failed.back().empty())
        throw_internal_error("tuning ", c.origin,
                             ": the reference kernels do not compile: ", failed.back());

    // Random non-zero inputs (fixed seed: the same inputs for every candidate).
    std::mt19937_64 rng(0x5eed);
    std::map<std::string, argument> params;
    for (std::size_t i = 0; i < c.inputs.size(); ++i)
        params["x" + std::to_string(i)] = random_argument(c.inputs[i], rng);
    std::vector<argument> want;
    {
        executable reference(builds.back().lowered, builds.back().binaries);
        want = reference.run(params, run_options{});
    }

    std::optional<perf_config> best;
    double best_ms = std::numeric_limits<double>::infinity();
    double first_ms = 0;
    for (std::size_t i = 0; i < configs.size(); ++i) {
        const std::string name = to_string(configs[i]);
        if (!failed[i].empty()) {
            ++summary_.disqualified;
            const std::string message = "tuning " + c.origin + ": " + name +
                                        " disqualified, it does not compile: " + failed[i];
            if (options_.warn) options_.warn(message);
            trace.push_back(name + " disqualified: it does not compile");
            continue;
        }
        executable candidate(builds[i].lowered, builds[i].binaries);
        run_options ro;
        ro.poison = true;
        const std::vector<argument> got = candidate.run(params, ro);
        std::string mismatch;
        for (std::size_t o = 0; o < got.size() && mismatch.empty(); ++o) {
            const output_comparison cmp = compare_outputs(got[o], want[o]);
            if (!cmp.passed)
                mismatch = "output " + std::to_string(o) + " relative RMS " +
                           std::to_string(cmp.relative_rms) + " (tolerance " +
                           std::to_string(cmp.tolerance) + ")";
        }
        if (!mismatch.empty()) {
            ++summary_.disqualified;
            const std::string message =
                "tuning " + c.origin + ": " + name + " disqualified, " + mismatch;
            if (options_.warn) options_.warn(message);
            trace.push_back(name + " disqualified: " + mismatch);
            continue;
        }
        const double ms = candidate.profile(params, profile_options{3, 10}).median_ms;
        trace.push_back("candidate " + name + " " + milliseconds(ms));
        if (i == 0) first_ms = ms;
        if (ms < best_ms) {
            best_ms = ms;
            best = configs[i];
        }
        const double elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
        status("tuning " + c.origin + " (" + short_name + "): " + std::to_string(i + 1) + "/" +
                   std::to_string(configs.size()) + " configs, best " + to_string(*best) + " " +
                   milliseconds(best_ms) + ", " + std::to_string(int(elapsed)) + " s",
               false);
    }
    const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    summary_.seconds += seconds;
    if (!best) {
        trace.push_back("tuning: every candidate was disqualified");
        status("tuning " + c.origin + ": every candidate was disqualified", true);
        return std::nullopt;
    }
    ++summary_.tuned;
    trace.push_back("tuned " + std::to_string(configs.size()) + " configs: " + to_string(*best) +
                    " " + milliseconds(best_ms) + " (heuristic's first " +
                    to_string(configs.front()) + " " + milliseconds(first_ms) + ")");
    status("tuned " + c.origin + " (" + short_name + "): " + to_string(*best) + " " +
               milliseconds(best_ms) + " in " + std::to_string(int(seconds + 0.5)) + " s",
           true);
    if (options_.cache != nullptr)
        options_.cache->put(cache_entry{key.slot(), key.text(), key.device, key.generator_version,
                                        to_string(*best), best_ms});
    return best;
}

} // namespace conflux::cuda
