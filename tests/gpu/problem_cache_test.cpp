// The seeded-bad-config regression from the upstream thread (issue 6), on the GPU: a private
// problem cache (given by path, never through the environment) holds, for a fused conv + add
// (f32 and f16, with and without a relu + transpose + reshape tail), in turn
//   (a) a valid config that cannot fuse the op (split-K),
//   (b) a config that is not valid for the problem,
//   (c) a string that is not a config,
//   (d) the tuned config under another generator version,
//   (e) (f16 on Hopper) a config of the warp-specialised wgmma family;
//   (f) (f16 on Hopper) a TMA config, which this convolution cannot use;
// every compile succeeds, its results match the reference target, and the trace says what was
// done with the entry (reused and split; or warned about, re-tuned and replaced). Without a GPU
// it prints "no CUDA device" and CTest reports it skipped.
#include "conflux/cuda/problem_cache.hpp"
#include "conflux/cuda/target.hpp"
#include "conflux/ir/output_comparison.hpp"
#include "conflux/ir/random_argument.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/ref/evaluate.hpp"
#include "cuda/codegen/gemm/perf_config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace conflux {
namespace {

using op::elementwise_kind;

program conv_add(dtype t, bool tail) {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", shape{t, {2, 8, 10, 10}});
    auto w = m.add_parameter("w", shape{t, {16, 8, 3, 3}});
    auto b = m.add_parameter("b", shape{t, {1, 16, 1, 1}});
    auto c = m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1, false}, {x, w});
    auto bb = m.add_instruction(op::broadcast{{2, 16, 10, 10}}, {b});
    instruction_ref v = m.add_instruction(op::make_elementwise(elementwise_kind::add), {c, bb});
    if (tail) {
        v = m.add_instruction(op::make_elementwise(elementwise_kind::relu), {v});
        v = m.add_instruction(op::transpose{{0, 2, 3, 1}}, {v});
        v = m.add_instruction(op::reshape{{2, 100, 16}}, {v});
    }
    m.add_return({v});
    return p;
}

bool contains(const std::vector<std::string>& lines, const std::string& what) {
    for (const auto& l : lines)
        if (l.find(what) != std::string::npos) return true;
    return false;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines)
        s += "  " + l + "\n";
    return s;
}

struct compiled_case {
    std::vector<std::string> trace, warnings;
    bool results_match = false;
    std::string detail;
};

compiled_case compile_and_check(dtype t, bool tail, const std::filesystem::path& store,
                                cuda::tune_mode mode) {
    compiled_case r;
    cuda::compile_options o;
    o.tune = mode;
    o.problem_cache_path = store;
    o.warn = [&](const std::string& w) { r.warnings.push_back(w); };
    auto compiled = cuda::compile(conv_add(t, tail), o);
    r.trace = compiled.trace();
    std::mt19937_64 rng(11);
    std::map<std::string, argument> params;
    program reference = conv_add(t, tail);
    for (instruction_ref p : reference.main().parameters())
        params[p->get_operator().get_if<op::param>()->name_] = random_argument(p->get_shape(), rng);
    const auto want = ref::evaluate(reference, params);
    const auto got = compiled.run(params, {.poison = true, .sync_each_step = true});
    r.results_match = true;
    for (std::size_t k = 0; k < want.size(); ++k) {
        const auto c = compare_outputs(got.at(k), want[k]);
        if (!c.passed) {
            r.results_match = false;
            r.detail +=
                "output " + std::to_string(k) + " rel rms " + std::to_string(c.relative_rms) + "; ";
        }
    }
    return r;
}

class ProblemCacheRegression : public ::testing::TestWithParam<std::tuple<dtype, bool>> {};

TEST_P(ProblemCacheRegression, EverySeededEntryCompilesAndMatchesTheReference) {
    const auto [t, tail] = GetParam();
    const auto dir = std::filesystem::temp_directory_path() /
                     ("conflux_pc_" + std::to_string(::getpid()) + "_" + std::string(to_string(t)) +
                      (tail ? "_tail" : ""));
    std::filesystem::remove_all(dir);
    const auto store = dir / "problems.sqlite";
    auto quiet = [](const std::string&) {};

    // Tuning fills the store with the one fused op's entry.
    const compiled_case first = compile_and_check(t, tail, store, cuda::tune_mode::quick);
    ASSERT_TRUE(first.results_match) << first.detail << joined(first.trace);
    ASSERT_TRUE(contains(first.trace, "tuned ")) << joined(first.trace);
    cuda::cache_entry tuned;
    {
        auto cache = cuda::problem_cache::open(store, quiet);
        const auto entries = cache.list();
        ASSERT_EQ(entries.size(), 1u);
        tuned = entries[0];
    }
    // A split-K config valid for this problem, from the candidates the compile ranked, and (f16
    // on Hopper) one of the warp-specialised wgmma family.
    std::string split_k, warp_specialised;
    {
        cuda::compile_options o;
        o.tune = cuda::tune_mode::none;
        o.use_problem_cache = false;
        const auto compiled = cuda::compile(conv_add(t, tail), o);
        for (const auto& c : compiled.anchor_candidates().at(0)) {
            auto parsed = cuda::parse_perf_config(c);
            if (parsed && parsed->split_k > 1) split_k = c;
            if (parsed && parsed->warp_specialised && !parsed->tma && warp_specialised.empty())
                warp_specialised = c;
        }
    }
    ASSERT_FALSE(split_k.empty()) << "the candidate space has no split-K config for this problem";

    struct seed {
        const char* name;
        std::string config, version;
        const char* expect_trace;
        bool warns;
        bool splits = true; // reused through the split path (else as it is, fused or split)
    };
    std::vector<seed> seeds{
        {"(a) split-K, cannot fuse", split_k, tuned.generator_version, "split-K", false},
        {"(b) not valid here", "256x256x64_w4x4_s4_k1", tuned.generator_version, "not valid here",
         true},
        {"(c) not a config", "fastest please", tuned.generator_version, "is not a perf config",
         true},
        {"(d) another generator version", tuned.config, "gemm-0", "by generator gemm-0", true},
    };
    if (!warp_specialised.empty()) {
        seeds.push_back({"(e) a warp-specialised config", warp_specialised, tuned.generator_version,
                         "problem cache: ", false, false});
        // The padded 3x3 convolution gathers its input, which TMA cannot copy: a cached _tma
        // config is refused and re-tuned.
        seeds.push_back({"(f) a TMA config this problem cannot use",
                         "128x128x64_w8x1_s4_k1_wgmma_pp_tma", tuned.generator_version,
                         "not valid here", true});
    }
    for (const seed& s : seeds) {
        SCOPED_TRACE(std::string(s.name) + " " + std::string(to_string(t)) +
                     (tail ? " with tail" : ""));
        {
            auto cache = cuda::problem_cache::open(store, quiet);
            cuda::cache_entry e = tuned;
            e.config = s.config;
            e.generator_version = s.version;
            cache.put(e);
        }
        const compiled_case r = compile_and_check(t, tail, store, cuda::tune_mode::quick);
        std::cout << s.name << " " << to_string(t) << (tail ? " +tail" : "") << ":\n"
                  << joined(r.trace);
        EXPECT_TRUE(r.results_match) << r.detail;
        EXPECT_TRUE(contains(r.trace, s.expect_trace)) << joined(r.trace);
        EXPECT_EQ(!r.warnings.empty(), s.warns) << joined(r.warnings);
        auto cache = cuda::problem_cache::open(store, quiet);
        const auto after = cache.list();
        ASSERT_EQ(after.size(), 1u);
        if (s.warns) {
            // Re-tuned and replaced by a config that parses and is current.
            EXPECT_TRUE(contains(r.trace, "tuned ")) << joined(r.trace);
            EXPECT_TRUE(cuda::parse_perf_config(after[0].config).has_value()) << after[0].config;
            EXPECT_EQ(after[0].generator_version, tuned.generator_version);
        } else {
            // Reused as it is (split-K through the split path).
            EXPECT_TRUE(contains(r.trace, "problem cache: " + s.config)) << joined(r.trace);
            if (s.splits) {
                EXPECT_TRUE(contains(r.trace, tail ? "-> 3-way" : "-> 2-way")) << joined(r.trace);
            }
            EXPECT_EQ(after[0].config, s.config);
        }
    }
    // Tuning off: a bad entry is warned about and removed, and the heuristic runs.
    {
        auto cache = cuda::problem_cache::open(store, quiet);
        cuda::cache_entry e = tuned;
        e.config = "fastest please";
        cache.put(e);
    }
    const compiled_case off = compile_and_check(t, tail, store, cuda::tune_mode::none);
    EXPECT_TRUE(off.results_match) << off.detail;
    EXPECT_TRUE(contains(off.trace, "heuristic: ")) << joined(off.trace);
    EXPECT_FALSE(off.warnings.empty());
    EXPECT_TRUE(cuda::problem_cache::open(store, quiet).list().empty());
    std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(FusedConvAdd, ProblemCacheRegression,
                         ::testing::Combine(::testing::Values(dtype::f32, dtype::f16),
                                            ::testing::Bool()));

} // namespace
} // namespace conflux

int main(int argc, char** argv) {
    if (conflux::cuda::available_devices() == 0) {
        std::cout << "no CUDA device (" << conflux::cuda::no_device_reason()
                  << "): the problem cache regression is skipped\n";
        return 0;
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
