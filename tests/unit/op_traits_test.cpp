// The facts each op declares about itself (op_traits, view_offset), against what the op is: the
// expected sets and offsets below are worked out by hand, not taken from the ops.
#include "conflux/ir/builtin_ops.hpp" // get_tuple_elem
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/fused.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/pooling.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/resize.hpp"
#include "conflux/ops/scatter.hpp"
#include "conflux/ops/views.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace op_traits_test {

using namespace conflux;

namespace {

// One instance of every op (both modes of the ops whose name depends on an attribute).
std::vector<operation> all_ops() {
    std::vector<operation> ops{op::reshape{{6}},
                               op::transpose{{1, 0}},
                               op::squeeze{{0}},
                               op::unsqueeze{{0}},
                               op::flatten{},
                               op::broadcast{{2, 3}},
                               op::slice{{0}, {0}, {1}, {}},
                               op::slice{{0}, {1}, {0}, {-1}},
                               op::contiguous{},
                               op::make_elementwise(op::elementwise_kind::add),
                               op::make_convert(dtype::f16),
                               op::convolution{},
                               op::dot{},
                               op::pointwise{},
                               op::fused_gemm{},
                               op::softmax{},
                               op::softmax{.log = true},
                               op::arg_reduce{},
                               op::batch_norm{},
                               op::layer_norm{},
                               op::pooling{},
                               op::pooling{.mode = op::pooling_mode::average},
                               op::concat{},
                               op::pad{},
                               op::gather{},
                               op::gather_elements{},
                               op::resize{},
                               op::gather_nd{},
                               op::scatter_nd{},
                               op::scatter_elements{},
                               op::get_tuple_elem{}};
    for (auto kind :
         {op::reduce_kind::sum, op::reduce_kind::mean, op::reduce_kind::max, op::reduce_kind::min,
          op::reduce_kind::prod, op::reduce_kind::l1, op::reduce_kind::l2, op::reduce_kind::log_sum,
          op::reduce_kind::log_sum_exp, op::reduce_kind::sum_square})
        ops.push_back(op::reduce{.kind = kind});
    return ops;
}

// The names of the ops in all_ops() for which `fact` holds.
template <class Fact> std::set<std::string> names_where(Fact fact) {
    std::set<std::string> names;
    for (const operation& o : all_ops())
        if (fact(o.traits())) names.insert(o.name());
    return names;
}

using names = std::set<std::string>;

} // namespace

TEST(op_traits, layout_only_is_exactly_the_reindexing_ops) {
    EXPECT_EQ(names_where([](op_traits t) { return t.layout_only; }),
              (names{"reshape", "transpose", "squeeze", "unsqueeze", "flatten"}));
}

TEST(op_traits, reshape_like_is_layout_only_without_transpose) {
    EXPECT_EQ(names_where([](op_traits t) { return t.reshape_like; }),
              (names{"reshape", "squeeze", "unsqueeze", "flatten"}));
    for (const operation& o : all_ops())
        EXPECT_TRUE(!o.traits().reshape_like || o.traits().layout_only) << o.name();
}

TEST(op_traits, broadcast_replicates_and_slice_selects) {
    EXPECT_EQ(names_where([](op_traits t) { return t.replicates; }), names{"broadcast"});
    EXPECT_EQ(names_where([](op_traits t) { return t.selects; }), names{"slice"});
}

TEST(op_traits, views_are_the_layout_ops_broadcast_and_forward_slices) {
    EXPECT_EQ(
        names_where([](op_traits t) { return t.view; }),
        (names{"reshape", "transpose", "squeeze", "unsqueeze", "flatten", "broadcast", "slice"}));
    EXPECT_FALSE(operation(op::slice{{0}, {1}, {0}, {-1}}).traits().view);
}

TEST(op_traits, only_convolution_and_dot_are_anchors) {
    EXPECT_EQ(names_where([](op_traits t) { return t.anchor; }), (names{"convolution", "dot"}));
    EXPECT_EQ(names_where([](op_traits t) { return t.has_anchor_module; }), names{"fused_gemm"});
}

TEST(op_traits, reductions_and_normalisations_accumulate_in_f32) {
    EXPECT_EQ(
        names_where([](op_traits t) { return t.accumulates_in_f32; }),
        (names{"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_l1",
               "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square", "softmax",
               "log_softmax", "batch_normalization", "layer_normalization"}));
}

// ---------------------------------------------------------------------------------------------
// view_offset: where each view starts in its input's memory, in elements.

namespace {

const shape standard_2x3x4{dtype::f32, {2, 3, 4}};
// [4, 3, 2] standard, transposed by [2, 1, 0]: lens [2, 3, 4], strides [1, 2, 6].
const shape reversed_2x3x4{dtype::f32, {2, 3, 4}, {1, 2, 6}};

std::optional<std::size_t> offset(const operation& o, const shape& in) {
    const auto through_operation = o.view_offset(in);
    EXPECT_EQ(through_operation, op::view_offset(o, in)) << o.name();
    return through_operation;
}

} // namespace

TEST(view_offset, reindexing_views_start_at_the_input) {
    EXPECT_EQ(offset(op::transpose{{2, 0, 1}}, standard_2x3x4), 0u);
    EXPECT_EQ(offset(op::transpose{{2, 0, 1}}, reversed_2x3x4), 0u);
    EXPECT_EQ(offset(op::squeeze{{0}}, shape{dtype::f32, {1, 3}}), 0u);
    EXPECT_EQ(offset(op::unsqueeze{{1}}, reversed_2x3x4), 0u);
    EXPECT_EQ(offset(op::broadcast{{5, 2, 3, 4}}, reversed_2x3x4), 0u);
}

TEST(view_offset, reshape_and_flatten_copy_when_the_strides_do_not_allow_a_view) {
    EXPECT_EQ(offset(op::reshape{{6, 4}}, standard_2x3x4), 0u);
    EXPECT_EQ(offset(op::flatten{1}, standard_2x3x4), 0u);
    // Merging axes 1 and 2 of strides [2, 6] needs stride 2 == 6 * 4.
    EXPECT_EQ(offset(op::reshape{{2, 12}}, reversed_2x3x4), std::nullopt);
    EXPECT_EQ(offset(op::flatten{1}, reversed_2x3x4), std::nullopt);
    // Splitting one axis is always a view.
    EXPECT_EQ(offset(op::reshape{{2, 3, 2, 2}}, reversed_2x3x4), 0u);
    // flatten{0}: [1, 24], which merges all three axes.
    EXPECT_EQ(offset(op::flatten{0}, reversed_2x3x4), std::nullopt);
}

TEST(view_offset, slice_starts_at_its_first_element) {
    const shape s{dtype::f32, {4, 5}}; // strides [5, 1]
    EXPECT_EQ(offset(op::slice{{0, 1}, {1, 2}, {3, 5}, {}}, s), 1u * 5 + 2u);
    // A negative start counts from the end: 5 - 2 = 3.
    EXPECT_EQ(offset(op::slice{{1}, {-2}, {5}, {}}, s), 3u);
    // Axes absent: 0, 1, ...; steps do not move the start.
    EXPECT_EQ(offset(op::slice{{}, {2, 1}, {4, 5}, {2, 3}}, s), 2u * 5 + 1u);
    // A transposed input: lens [4, 5], strides [1, 4].
    EXPECT_EQ(offset(op::slice{{0, 1}, {1, 2}, {3, 5}, {}}, shape{dtype::f32, {4, 5}, {1, 4}}),
              1u * 1 + 2u * 4);
    // An empty slice must not point past the input.
    EXPECT_EQ(offset(op::slice{{0}, {2}, {2}, {}}, s), 0u);
    // A reversing slice copies.
    EXPECT_EQ(offset(op::slice{{0}, {3}, {0}, {-1}}, s), std::nullopt);
}

TEST(view_offset, non_views_have_none) {
    EXPECT_EQ(offset(op::contiguous{}, reversed_2x3x4), std::nullopt);
    EXPECT_EQ(offset(op::make_elementwise(op::elementwise_kind::neg), standard_2x3x4),
              std::nullopt);
    EXPECT_EQ(offset(op::softmax{}, standard_2x3x4), std::nullopt);
}

} // namespace op_traits_test
