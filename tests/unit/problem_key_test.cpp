// Problem keys (src/cuda/tuning/problem_key.hpp): what a tuned config is remembered under. The
// keys are read from the compile trace, as a user sees them with --trace-compile.
#include "conflux/cuda/problem_cache.hpp"
#include "conflux/cuda/target.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "cuda/tuning/problem_key.hpp"
#include "fused_patterns.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace conflux {
namespace problem_key_test {

std::vector<std::string> keys_of(program p) {
    cuda::compile_options o;
    o.arch = "sm_90";
    o.tune = cuda::tune_mode::none;
    o.use_problem_cache = false;
    o.use_kernel_cache = false;
    std::vector<std::string> keys;
    const auto compiled = cuda::compile(std::move(p), o);
    for (const auto& line : compiled.trace()) {
        const auto at = line.find(": key ");
        if (at != std::string::npos) keys.push_back(line.substr(at + 6));
    }
    return keys;
}

program pattern(std::size_t i, dtype t = dtype::f16) {
    program p;
    test::fused_patterns().at(i).build(p.main(), t);
    return p;
}

// The conv of pattern 0 (conv+bias+relu) with nothing after it but the layout pass's transpose
// back to NCHW.
program conv_alone() {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f16, {2, 16, 12, 12}});
    auto w = m.add_parameter("w", shape{dtype::f16, {32, 16, 3, 3}});
    m.add_return(
        {m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1, false}, {x, w})});
    return p;
}

TEST(ProblemKey, FusedAndUnfusedConvolutionsOfOneShapeGetDifferentKeys) {
    const auto fused = keys_of(pattern(0));
    const auto alone = keys_of(conv_alone());
    ASSERT_EQ(fused.size(), 1u);
    ASSERT_EQ(alone.size(), 1u);
    EXPECT_NE(fused[0], alone[0]);
    // Same anchor problem: only the fusion signature differs.
    const auto problem = [](const std::string& k) { return k.substr(0, k.rfind(" | fusion ")); };
    EXPECT_EQ(problem(fused[0]), problem(alone[0]));
    EXPECT_NE(fused[0].find(" | fusion "), std::string::npos);
}

TEST(ProblemKey, TheSamePatternGivesTheSameKeyAndOthersDoNot) {
    EXPECT_EQ(keys_of(pattern(1)), keys_of(pattern(1)));
    EXPECT_NE(keys_of(pattern(1)), keys_of(pattern(0)));             // another epilogue
    EXPECT_NE(keys_of(pattern(1)), keys_of(pattern(1, dtype::f32))); // another dtype
    const auto k = keys_of(pattern(1)).at(0);
    EXPECT_NE(k.find("| sm_90/"), std::string::npos) << k;
    EXPECT_NE(k.find(std::string("| ") + cuda::gemm_generator_version + " |"), std::string::npos)
        << k;
}

TEST(ProblemKey, TheFusionSignatureSeesStridesAndOpsButNotNames) {
    auto build = [](const std::string& name, op::elementwise_kind k) {
        auto p = std::make_unique<program>();
        module& m = p->main();
        auto a = m.add_parameter(name, shape{dtype::f32, {4, 8}});
        m.add_return({m.add_instruction(op::make_elementwise(k), {a})});
        return p;
    };
    const shape standard{dtype::f32, {4, 8}}, transposed{dtype::f32, {4, 8}, {1, 4}};
    auto relu = build("a", op::elementwise_kind::relu);
    auto renamed = build("b", op::elementwise_kind::relu);
    auto neg = build("a", op::elementwise_kind::neg);
    const auto sig = [](const program& p, const shape& in, const shape& out) {
        return cuda::fusion_signature(p.main(), {in}, {out});
    };
    EXPECT_EQ(sig(*relu, standard, standard), sig(*renamed, standard, standard));
    EXPECT_NE(sig(*relu, standard, standard), sig(*neg, standard, standard));
    EXPECT_NE(sig(*relu, standard, standard), sig(*relu, transposed, standard));
    EXPECT_NE(sig(*relu, standard, standard), sig(*relu, standard, transposed));
    EXPECT_EQ(sig(*relu, standard, standard).size(), 16u);
}

// A new generator version makes every entry of the old one stale: the user hears it once per
// device and version, not once per problem, while the trace still names each key.
TEST(ProblemKey, StaleEntriesWarnOncePerGeneratorVersion) {
    auto two_products = [] {
        program p;
        module& m = p.main();
        auto a = m.add_parameter("a", shape{dtype::f16, {256, 128}});
        auto b = m.add_parameter("b", shape{dtype::f16, {128, 192}});
        auto c = m.add_parameter("c", shape{dtype::f16, {128, 64}});
        m.add_return({m.add_instruction(op::dot{}, {a, b}), m.add_instruction(op::dot{}, {a, c})});
        return p;
    };
    const auto keys = keys_of(two_products());
    ASSERT_EQ(keys.size(), 2u);
    const auto dir =
        std::filesystem::temp_directory_path() / ("conflux_stale_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto store = dir / "problems.sqlite";
    const std::string current = std::string(" | ") + cuda::gemm_generator_version + " | ";
    {
        auto cache = cuda::problem_cache::open(store, nullptr);
        for (const auto& k : keys) {
            const auto at = k.find(current);
            ASSERT_NE(at, std::string::npos) << k;
            const auto device_at = k.rfind(" | ", at - 1);
            const std::string slot = k.substr(0, device_at) + k.substr(at + current.size() - 3);
            cache.put({.slot = slot,
                       .key = k,
                       .device = "sm_90/132",
                       .generator_version = "gemm-0",
                       .config = "128x128x32_w2x2_s3_k1",
                       .time_ms = 1});
        }
    }
    cuda::compile_options o;
    o.arch = "sm_90";
    o.tune = cuda::tune_mode::none;
    o.problem_cache_path = store;
    o.use_kernel_cache = false;
    std::vector<std::string> warnings;
    o.warn = [&](const std::string& w) { warnings.push_back(w); };
    const auto compiled = cuda::compile(two_products(), o);
    std::size_t stale = 0;
    for (const auto& line : compiled.trace())
        if (line.find("by generator gemm-0") != std::string::npos) ++stale;
    EXPECT_EQ(stale, 2u);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("by generator gemm-0 are not used"), std::string::npos)
        << warnings[0];
    EXPECT_NE(warnings[0].find("--trace-compile"), std::string::npos) << warnings[0];
    std::filesystem::remove_all(dir);
}

} // namespace problem_key_test
} // namespace conflux
