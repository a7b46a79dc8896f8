// fuse_pointwise: structure of the fused groups and their submodules, and unchanged results.
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/fused.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/dce.hpp"
#include "conflux/passes/fuse_pointwise.hpp"
#include "unit/pass_test_helpers.hpp"

namespace fuse_pointwise_test {

using namespace conflux;
using namespace conflux::test;
using op::elementwise_kind;

namespace {

void run_fuse_pointwise(module& m) {
    fuse_pointwise{}.apply(m);
    dce{}.apply(m);
}

auto ew(elementwise_kind k) {
    return op::make_elementwise(k);
}

} // namespace

// Parameters are numbered in order of first use walking the group in module order; the pulled
// broadcast comes first, so the bias is x0.
TEST(fuse_pointwise, bias_relu_pulls_the_broadcast_in) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {2, 4, 3, 3}});
        auto b = m.add_parameter("b", shape{dtype::f32, {4, 1, 1}});
        auto bb = m.add_instruction(op::broadcast{{2, 4, 3, 3}}, {b});
        auto a = m.add_instruction(ew(elementwise_kind::add), {x, bb});
        auto r = m.add_instruction(ew(elementwise_kind::relu), {a});
        m.add_return({r});
    };
    auto p = transform_and_compare(build, run_fuse_pointwise);
    EXPECT_EQ(p.main().to_string(), "module main {\n"
                                    "  %x = @param -> f32[2,4,3,3]\n"
                                    "  %b = @param -> f32[4,1,1]\n"
                                    "  @2 = pointwise(%b, %x) [pointwise0] -> f32[2,4,3,3]\n"
                                    "  @return(@2)\n"
                                    "}\n");
    EXPECT_EQ(p.get_module("pointwise0")->to_string(),
              "module pointwise0 {\n"
              "  %x0 = @param -> f32[4,1,1]\n"
              "  %x1 = @param -> f32[2,4,3,3]\n"
              "  @2 = broadcast{\"out_lens\":[2,4,3,3]}(%x0) -> f32[2,4,3,3]{0,1,0,0}\n"
              "  @3 = add(%x1, @2) -> f32[2,4,3,3]\n"
              "  @4 = relu(@3) -> f32[2,4,3,3]\n"
              "  @return(@4)\n"
              "}\n");
}

TEST(fuse_pointwise, single_op_becomes_a_pointwise_op) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {5}});
        m.add_return({m.add_instruction(ew(elementwise_kind::sigmoid), {x})});
    };
    auto p = transform_and_compare(build, run_fuse_pointwise);
    EXPECT_EQ(op_names(p.main()), "pointwise @return");
    EXPECT_EQ(op_names(*p.get_module("pointwise0")), "sigmoid @return");
}

TEST(fuse_pointwise, value_used_outside_ends_a_group) {
    // a = x*y is used by the group (a + x) and by the return: a is the output of its own group.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {6}});
        auto y = m.add_parameter("y", shape{dtype::f32, {6}});
        auto a = m.add_instruction(ew(elementwise_kind::mul), {x, y});
        auto b = m.add_instruction(ew(elementwise_kind::add), {a, x});
        auto c = m.add_instruction(ew(elementwise_kind::tanh), {b});
        m.add_return({c, a});
    };
    auto p = transform_and_compare(build, run_fuse_pointwise);
    EXPECT_EQ(op_names(p.main()), "pointwise pointwise @return");
    EXPECT_EQ(op_names(*p.get_module("pointwise0")), "mul @return");
    EXPECT_EQ(op_names(*p.get_module("pointwise1")), "add tanh @return");
    // Parameters in order of first use: the first group's result, then x.
    EXPECT_EQ(p.main().to_string(), "module main {\n"
                                    "  %x = @param -> f32[6]\n"
                                    "  %y = @param -> f32[6]\n"
                                    "  @2 = pointwise(%x, %y) [pointwise0] -> f32[6]\n"
                                    "  @3 = pointwise(@2, %x) [pointwise1] -> f32[6]\n"
                                    "  @return(@3, @2)\n"
                                    "}\n");
}

TEST(fuse_pointwise, diamond_inside_one_group) {
    // a feeds two members that join again: still one single-output group.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {3, 4}});
        auto a = m.add_instruction(ew(elementwise_kind::exp), {x});
        auto b = m.add_instruction(ew(elementwise_kind::neg), {a});
        auto c = m.add_instruction(ew(elementwise_kind::abs), {a});
        m.add_return({m.add_instruction(ew(elementwise_kind::max), {b, c})});
    };
    auto p = transform_and_compare(build, run_fuse_pointwise);
    EXPECT_EQ(op_names(p.main()), "pointwise @return");
    EXPECT_EQ(op_names(*p.get_module("pointwise0")), "exp neg abs max @return");
}

TEST(fuse_pointwise, literals_are_inputs) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {4}});
        auto c = m.add_literal(from_vector(dtype::f32, {4}, std::vector<float>{1, 2, 3, 4}));
        auto a = m.add_instruction(ew(elementwise_kind::mul), {x, c});
        m.add_return({m.add_instruction(ew(elementwise_kind::relu), {a})});
    };
    auto p = transform_and_compare(build, run_fuse_pointwise);
    EXPECT_EQ(op_names(p.main()), "@literal pointwise @return");
    EXPECT_EQ(p.get_module("pointwise0")->parameters().size(), 2u);
}

TEST(fuse_pointwise, view_of_an_elementwise_result_stays_outside) {
    // relu -> transpose -> add: the transpose's input is elementwise, so it splits the groups.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {2, 3}});
        auto y = m.add_parameter("y", shape{dtype::f32, {3, 2}});
        auto r = m.add_instruction(ew(elementwise_kind::relu), {x});
        auto t = m.add_instruction(op::transpose{{1, 0}}, {r});
        m.add_return({m.add_instruction(ew(elementwise_kind::add), {t, y})});
    };
    auto p = transform_and_compare(build, run_fuse_pointwise);
    EXPECT_EQ(op_names(p.main()), "pointwise transpose pointwise @return");
}

TEST(fuse_pointwise, concat_of_outside_values_joins_the_group_after_it) {
    // DenseNet: concat(features) -> x * s + b -> relu is one kernel; the concat's inputs are
    // parameters of the group (one of them through a view), the result is unchanged.
    auto build = [](module& m) {
        auto a = m.add_parameter("a", shape{dtype::f32, {2, 3, 3, 2}});
        auto b = m.add_parameter("b", shape{dtype::f32, {2, 3, 2, 3}});
        auto s = m.add_parameter("s", shape{dtype::f32, {4}});
        auto tb = m.add_instruction(op::transpose{{0, 1, 3, 2}}, {b}); // [2,3,3,2]
        auto e = m.add_instruction(ew(elementwise_kind::exp), {a});
        auto cat = m.add_instruction(op::concat{3}, {e, tb}); // [2,3,3,4]
        auto bs = m.add_instruction(op::broadcast{{2, 3, 3, 4}}, {s});
        auto y = m.add_instruction(ew(elementwise_kind::mul), {cat, bs});
        m.add_return({m.add_instruction(ew(elementwise_kind::relu), {y})});
    };
    auto p = transform_and_compare(build, run_fuse_pointwise);
    EXPECT_EQ(op_names(p.main()), "pointwise @return");
    EXPECT_EQ(op_names(*p.get_module("pointwise0")),
              "transpose exp concat broadcast mul relu @return");
}

TEST(fuse_pointwise, concat_used_outside_stays_a_copy) {
    auto build = [](module& m) {
        auto a = m.add_parameter("a", shape{dtype::f32, {2, 3}});
        auto b = m.add_parameter("b", shape{dtype::f32, {2, 5}});
        auto cat = m.add_instruction(op::concat{1}, {a, b});
        m.add_return({m.add_instruction(ew(elementwise_kind::relu), {cat}), cat});
    };
    auto p = transform_and_compare(build, run_fuse_pointwise);
    EXPECT_EQ(op_names(p.main()), "concat pointwise @return");
}

} // namespace fuse_pointwise_test
