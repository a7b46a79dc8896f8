#include "conflux/passes/eliminate_common_subexpressions.hpp"

#include "conflux/ir/program.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/dce.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/ref/evaluate.hpp"

#include <gtest/gtest.h>

#include <random>

namespace conflux {
namespace eliminate_common_subexpressions_test {

std::size_t count(const module& m, const std::string& name) {
    std::size_t n = 0;
    for (const auto& ins : m)
        n += ins.name() == name;
    return n;
}

instruction_ref scalar(module& m, float v) {
    return m.add_literal(from_vector<float>(dtype::f32, {1}, {v}));
}

// BERT as exported: every layer turns the attention mask into its additive bias with a `where`
// over constants of its own, equal in value.
program masked_layers(int layers, bool equal_constants) {
    program p;
    module& m = p.main();
    auto mask = m.add_parameter("mask", shape{dtype::boolean, {4, 8}});
    auto x = m.add_parameter("x", shape{dtype::f32, {4, 8}});
    auto y = x;
    for (int i = 0; i < layers; ++i) {
        auto keep = m.add_instruction(op::broadcast{{4, 8}}, {scalar(m, 0.0f)});
        auto drop = m.add_instruction(op::broadcast{{4, 8}},
                                      {scalar(m, equal_constants ? -1e4f : -1e4f - float(i))});
        auto bias = m.add_instruction(op::make_elementwise(op::elementwise_kind::where),
                                      {mask, keep, drop});
        y = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {y, bias});
    }
    m.add_return({y});
    return p;
}

ref::parameter_map inputs() {
    std::mt19937 rng(4);
    std::vector<float> x(32);
    std::vector<std::uint8_t> mask(32);
    for (std::size_t i = 0; i < 32; ++i) {
        x[i] = std::uniform_real_distribution<float>(-1, 1)(rng);
        mask[i] = rng() % 2;
    }
    return {{"x", from_vector<float>(dtype::f32, {4, 8}, x)},
            {"mask", from_vector<std::uint8_t>(dtype::boolean, {4, 8}, mask)}};
}

TEST(eliminate_common_subexpressions, per_layer_copies_of_one_value_become_one) {
    program p = masked_layers(12, true);
    const auto want = ref::evaluate(p, inputs());
    run_passes(p.main(), {eliminate_common_subexpressions{}, dce{}});
    EXPECT_EQ(count(p.main(), "where"), 1u) << p.to_string();
    EXPECT_EQ(count(p.main(), "@literal"), 2u) << p.to_string();
    EXPECT_EQ(count(p.main(), "add"), 12u) << p.to_string(); // different inputs: all kept
    const auto got = ref::evaluate(p, inputs());
    EXPECT_TRUE(got.at(0).same_values(want.at(0)));
}

TEST(eliminate_common_subexpressions, different_values_and_returned_values_stay) {
    program p = masked_layers(3, false);
    run_passes(p.main(), {eliminate_common_subexpressions{}, dce{}});
    EXPECT_EQ(count(p.main(), "where"), 3u) << p.to_string();    // fill values differ
    EXPECT_EQ(count(p.main(), "@literal"), 4u) << p.to_string(); // one 0, three others

    // Two outputs computing the same value keep a value each.
    program two;
    module& m = two.main();
    auto x = m.add_parameter("x", shape{dtype::f32, {4, 8}});
    auto a = m.add_instruction(op::make_elementwise(op::elementwise_kind::exp), {x});
    auto b = m.add_instruction(op::make_elementwise(op::elementwise_kind::exp), {x});
    m.add_return({a, b});
    run_passes(m, {eliminate_common_subexpressions{}, dce{}});
    EXPECT_EQ(count(m, "exp"), 2u) << two.to_string();

    // Equal operations with different attributes are different values.
    program attrs;
    module& n = attrs.main();
    auto y = n.add_parameter("y", shape{dtype::f32, {4, 8}});
    auto l1 = n.add_instruction(op::make_elementwise(op::elementwise_kind::leaky_relu, 0.1f), {y});
    auto l2 = n.add_instruction(op::make_elementwise(op::elementwise_kind::leaky_relu, 0.2f), {y});
    n.add_return({n.add_instruction(op::make_elementwise(op::elementwise_kind::add), {l1, l2})});
    run_passes(n, {eliminate_common_subexpressions{}, dce{}});
    EXPECT_EQ(count(n, "leaky_relu"), 2u) << attrs.to_string();
}

} // namespace eliminate_common_subexpressions_test
} // namespace conflux
