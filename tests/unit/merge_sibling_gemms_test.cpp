#include "conflux/passes/merge_sibling_gemms.hpp"

#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/dce.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "unit/pass_test_helpers.hpp"

#include <gtest/gtest.h>

namespace conflux {
namespace merge_sibling_gemms_test {

using op::elementwise_kind;
using test::count_named;
using test::random_literal;

void merge_then_dce(module& m) {
    run_passes(m, {merge_sibling_gemms{}, dce{}});
}

instruction_ref ew(module& m, elementwise_kind k, std::vector<instruction_ref> in) {
    return m.add_instruction(op::make_elementwise(k), std::move(in));
}

// x [2,5,8] -> q, k, v projections as Hugging Face exports them: bias added after the product,
// q and k scaled by a scalar (BERT splits attention's 1/sqrt(d) between them), v without a
// scale; then scores = q.k^T, softmax, times v.
void attention_layer(module& m, bool v_bias) {
    auto x = m.add_parameter("x", shape{dtype::f32, {2, 5, 8}});
    auto project = [&](unsigned seed, std::size_t n, bool bias, float scale) {
        auto w = m.add_literal(random_literal({8, n}, seed));
        instruction_ref y = m.add_instruction(op::dot{}, {x, w});
        if (bias) {
            auto b = m.add_literal(random_literal({n}, seed + 100));
            y = ew(m, elementwise_kind::add, {m.add_instruction(op::broadcast{{2, 5, n}}, {b}), y});
        }
        if (scale != 1) {
            auto s = m.add_literal(from_vector<float>(dtype::f32, {1}, {scale}));
            y = ew(m, elementwise_kind::mul, {y, m.add_instruction(op::broadcast{{2, 5, n}}, {s})});
        }
        return y;
    };
    auto q = project(1, 6, true, 0.3f);
    auto k = project(2, 6, true, 0.3f);
    auto v = project(3, 4, v_bias, 1);
    auto kt = m.add_instruction(op::transpose{{0, 2, 1}}, {k});
    auto scores = m.add_instruction(op::dot{}, {q, kt});
    auto p = m.add_instruction(op::softmax{2}, {scores});
    m.add_return({m.add_instruction(op::dot{}, {p, v})});
}

TEST(merge_sibling_gemms, query_key_value_projections_become_one_product) {
    for (const bool v_bias : {true, false}) {
        program p = test::transform_and_compare([&](module& m) { attention_layer(m, v_bias); },
                                                merge_then_dce);
        const module& m = p.main();
        // One projection (6 + 6 + 4 columns) and the two products of attention.
        EXPECT_EQ(count_named(m, "dot"), 3u) << m.to_string();
        EXPECT_EQ(count_named(m, "slice"), 3u) << m.to_string();
        // Bias and scale folded: one add (the merged bias), no multiply.
        EXPECT_EQ(count_named(m, "add"), 1u) << m.to_string();
        EXPECT_EQ(count_named(m, "mul"), 0u) << m.to_string();
        EXPECT_NE(m.to_string().find("f32[2,5,16]"), std::string::npos) << m.to_string();
    }
}

TEST(merge_sibling_gemms, sixteen_bit_weights_round_once) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f16, {3, 8}});
        std::vector<instruction_ref> outs;
        for (unsigned i = 0; i < 2; ++i) {
            auto w = m.add_literal(from_vector<double>(
                dtype::f16, {8, 4}, to_vector<double>(random_literal({8, 4}, 10 + i))));
            auto s = m.add_literal(from_vector<float>(dtype::f16, {1}, {0.375f}));
            auto y = ew(m, elementwise_kind::mul,
                        {m.add_instruction(op::dot{}, {x, w}),
                         m.add_instruction(op::broadcast{{3, 4}}, {s})});
            outs.push_back(m.add_instruction(op::transpose{{1, 0}}, {y}));
        }
        m.add_return({m.add_instruction(
            op::dot{}, {outs[0], m.add_instruction(op::transpose{{1, 0}}, {outs[1]})})});
    };
    program p = test::transform_and_compare(build, merge_then_dce, 1e-2);
    // One projection and the final product; the scale folded into the f16 weights.
    EXPECT_EQ(count_named(p.main(), "dot"), 2u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "mul"), 0u) << p.to_string();
}

// LLaMA's MLP: silu(x.Wg) * (x.Wu), silu exported as g * sigmoid(g): one elementwise
// computation reads both products, which fuse_gemm already fuses into the second product's
// epilogue.
TEST(merge_sibling_gemms, products_meeting_in_one_elementwise_op_stay) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {4, 8}});
        auto g = m.add_instruction(op::dot{}, {x, m.add_literal(random_literal({8, 6}, 1))});
        auto u = m.add_instruction(op::dot{}, {x, m.add_literal(random_literal({8, 6}, 2))});
        auto silu = ew(m, elementwise_kind::mul, {g, ew(m, elementwise_kind::sigmoid, {g})});
        m.add_return({ew(m, elementwise_kind::mul, {silu, u})});
    };
    program p = test::transform_and_compare(build, merge_then_dce);
    EXPECT_EQ(count_named(p.main(), "dot"), 2u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "slice"), 0u) << p.to_string();
}

// LLaMA's attention: q and k multiplied by position-dependent factors (rotary positions) after
// their products, v read by attention directly. fuse_gemm gives q and k those factors as
// epilogues; merged, they would run in a kernel of their own over slices. Only v is left
// without an epilogue, and one product is nothing to merge.
TEST(merge_sibling_gemms, products_with_elementwise_epilogues_stay) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {4, 8}});
        auto cos = m.add_parameter("cos", shape{dtype::f32, {4, 6}});
        auto q = m.add_instruction(op::dot{}, {x, m.add_literal(random_literal({8, 6}, 1))});
        auto k = m.add_instruction(op::dot{}, {x, m.add_literal(random_literal({8, 6}, 2))});
        auto v = m.add_instruction(op::dot{}, {x, m.add_literal(random_literal({8, 6}, 3))});
        auto qr = ew(m, elementwise_kind::mul, {q, cos});
        auto kr = ew(m, elementwise_kind::mul,
                     {m.add_instruction(op::transpose{{1, 0}}, {k}),
                      m.add_instruction(op::transpose{{1, 0}}, {cos})});
        auto scores = m.add_instruction(op::dot{}, {qr, kr});
        m.add_return({m.add_instruction(op::dot{}, {scores, v})});
    };
    program p = test::transform_and_compare(build, merge_then_dce);
    EXPECT_EQ(count_named(p.main(), "dot"), 5u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "slice"), 0u) << p.to_string();
}

TEST(merge_sibling_gemms, other_inputs_variable_weights_and_returned_products_stay) {
    // Different inputs; a parameter as weights; a product the return reads.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {4, 8}});
        auto y = m.add_parameter("y", shape{dtype::f32, {4, 8}});
        auto w = m.add_parameter("w", shape{dtype::f32, {8, 6}});
        auto a = m.add_instruction(op::dot{}, {x, m.add_literal(random_literal({8, 6}, 1))});
        auto b = m.add_instruction(op::dot{}, {y, m.add_literal(random_literal({8, 6}, 2))});
        auto c = m.add_instruction(op::dot{}, {x, w});
        auto d = m.add_instruction(op::dot{}, {x, m.add_literal(random_literal({8, 6}, 3))});
        m.add_return({ew(m, elementwise_kind::relu, {a}), ew(m, elementwise_kind::relu, {b}),
                      ew(m, elementwise_kind::relu, {c}), d});
    };
    program p = test::transform_and_compare(build, merge_then_dce);
    EXPECT_EQ(count_named(p.main(), "dot"), 4u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "slice"), 0u) << p.to_string();
}

} // namespace merge_sibling_gemms_test
} // namespace conflux
