// Simplify's rewrites that leave attention scores with one additive bias: a constant moved
// through a reshape (materialised in the other shape) and two constant addends regrouped.
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/dce.hpp"
#include "conflux/passes/fuse_attention.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/simplify.hpp"
#include "unit/pass_test_helpers.hpp"

#include <gtest/gtest.h>

namespace conflux {
namespace simplify_attention_bias_test {

using op::elementwise_kind;
using test::count_named;
using test::random_literal;

instruction_ref ew(module& m, elementwise_kind k, std::vector<instruction_ref> in) {
    return m.add_instruction(op::make_elementwise(k), std::move(in));
}

TEST(simplify_attention_bias, two_constant_addends_become_one) {
    auto build = [](module& m) {
        auto y = m.add_parameter("y", shape{dtype::f32, {2, 3, 4}});
        auto c1 =
            m.add_instruction(op::broadcast{{2, 3, 4}}, {m.add_literal(random_literal({4}, 1))});
        auto c2 =
            m.add_instruction(op::broadcast{{2, 3, 4}}, {m.add_literal(random_literal({3, 1}, 2))});
        m.add_return({ew(m, elementwise_kind::add, {c2, ew(m, elementwise_kind::add, {y, c1})})});
    };
    program p = test::transform_and_compare(build, [](module& m) { run_passes(m, {simplify{}}); });
    EXPECT_EQ(count_named(p.main(), "add"), 1u) << p.to_string();
}

// Swin's shifted-window attention as exported: scores + relative-position bias, reshaped by
// window group, + the shift mask, reshaped back, softmax, times v. One attention op after.
void shifted_window_attention(module& m) {
    auto q = m.add_parameter("q", shape{dtype::f32, {8, 3, 5, 4}});
    auto k = m.add_parameter("k", shape{dtype::f32, {8, 3, 5, 4}});
    auto v = m.add_parameter("v", shape{dtype::f32, {8, 3, 5, 4}});
    auto kt = m.add_instruction(op::transpose{{0, 1, 3, 2}}, {k});
    auto scores = m.add_instruction(op::dot{}, {q, kt});
    auto position = m.add_instruction(op::broadcast{{8, 3, 5, 5}},
                                      {m.add_literal(random_literal({1, 3, 5, 5}, 3))});
    auto biased = ew(m, elementwise_kind::add, {scores, position});
    auto grouped = m.add_instruction(op::reshape{{2, 4, 3, 5, 5}}, {biased});
    auto mask = m.add_instruction(op::broadcast{{2, 4, 3, 5, 5}},
                                  {m.add_literal(random_literal({1, 4, 1, 5, 5}, 4, -100, 0))});
    auto masked = ew(m, elementwise_kind::add, {grouped, mask});
    auto back = m.add_instruction(op::reshape{{8, 3, 5, 5}}, {masked});
    auto probabilities = m.add_instruction(op::softmax{3}, {back});
    m.add_return({m.add_instruction(op::dot{}, {probabilities, v})});
}

TEST(simplify_attention_bias, a_mask_added_between_reshapes_joins_the_other_bias) {
    program p = test::transform_and_compare(shifted_window_attention, [](module& m) {
        run_passes(m, {simplify{}, fuse_attention{}, dce{}});
    });
    EXPECT_EQ(count_named(p.main(), "attention"), 1u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "softmax"), 0u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "reshape"), 0u) << p.to_string();
}

// A bias broadcast over many rows after a reshape is not materialised in the other shape.
TEST(simplify_attention_bias, a_bias_over_many_rows_stays_a_broadcast) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {64, 8}});
        auto y = m.add_instruction(op::dot{}, {x, m.add_literal(random_literal({8, 8}, 5))});
        auto r = m.add_instruction(op::reshape{{8, 8, 8}}, {y});
        auto b =
            m.add_instruction(op::broadcast{{8, 8, 8}}, {m.add_literal(random_literal({8}, 6))});
        m.add_return({ew(m, elementwise_kind::add, {r, b})});
    };
    program p = test::transform_and_compare(build, [](module& m) { run_passes(m, {simplify{}}); });
    std::size_t largest = 0;
    for (const auto& ins : p.main())
        if (ins.name() == "@literal") largest = std::max(largest, ins.get_shape().elements());
    EXPECT_LE(largest, 64u) << p.to_string();
}

} // namespace simplify_attention_bias_test
} // namespace conflux
