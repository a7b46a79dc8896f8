// Problem keys (src/cuda/tuning/problem_key.hpp): what a tuned config is remembered under. The
// keys are read from the compile trace, as a user sees them with --trace-compile.
#include "conflux/cuda/target.hpp"
#include "conflux/ops/elementwise.hpp"
#include "cuda/tuning/problem_key.hpp"
#include "fused_patterns.hpp"

#include <gtest/gtest.h>

namespace conflux {
namespace {

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

} // namespace
} // namespace conflux
