// split_reduction: reductions over several axes of data whose fastest axis is kept, with few
// outputs, become two reductions; the values are the unsplit reduction's (reference target).
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/split_reduction.hpp"
#include "unit/pass_test_helpers.hpp"

namespace split_reduction_test {

using namespace conflux;
using namespace conflux::test;

namespace {

void run_split(module& m) {
    split_reduction{}.apply(m);
}

// x [N,H,W,C] seen as NCHW (what a channels-last convolution's result looks like to the rest
// of the graph), reduced over the spatial axes.
module_builder channels_last_pool(op::reduce_kind kind, dims nhwc, bool keepdims = true,
                                  dtype t = dtype::f32) {
    return [=](module& m) {
        auto x = m.add_parameter("x", shape{t, nhwc});
        auto nchw = m.add_instruction(op::transpose{{0, 3, 1, 2}}, {x});
        m.add_return({m.add_instruction(op::reduce{kind, {2, 3}, keepdims, false}, {nchw})});
    };
}

std::vector<std::vector<std::int64_t>> reduction_axes(const module& m) {
    std::vector<std::vector<std::int64_t>> axes;
    for (const auto& ins : m)
        if (const auto* r = ins.get_operator().get_if<op::reduce>()) axes.push_back(r->axes);
    return axes;
}

TEST(split_reduction, a_spatial_mean_of_channels_last_data_reduces_the_width_first) {
    auto p =
        transform_and_compare(channels_last_pool(op::reduce_kind::mean, {2, 9, 11, 3}), run_split);
    const auto axes = reduction_axes(p.main());
    ASSERT_EQ(axes.size(), 2u) << p.to_string();
    EXPECT_EQ(axes[0], (std::vector<std::int64_t>{3})); // W: the smaller stride of the two
    EXPECT_EQ(axes[1], (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(p.main().get_return()->inputs()[0]->get_shape().lens(), (dims{2, 3, 1, 1}));
}

TEST(split_reduction, max_min_f32_sum_and_dropped_axes_split_with_the_same_values) {
    for (auto kind : {op::reduce_kind::max, op::reduce_kind::min, op::reduce_kind::sum}) {
        auto p = transform_and_compare(channels_last_pool(kind, {3, 8, 10, 5}), run_split);
        EXPECT_EQ(reduction_axes(p.main()).size(), 2u) << p.to_string();
    }
    auto flat = transform_and_compare(
        channels_last_pool(op::reduce_kind::mean, {3, 8, 10, 5}, /*keepdims=*/false), run_split);
    EXPECT_EQ(reduction_axes(flat.main()).size(), 2u) << flat.to_string();
    EXPECT_EQ(flat.main().get_return()->inputs()[0]->get_shape().lens(), (dims{3, 5}));
}

TEST(split_reduction, three_reduced_axes_take_the_inner_ones_that_keep_enough_outputs) {
    // [N,D,H,W,C] seen as NCDHW, reduced over D, H, W: 2*4 = 8 outputs of 6*8*10 elements.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {2, 6, 8, 10, 4}});
        auto v = m.add_instruction(op::transpose{{0, 4, 1, 2, 3}}, {x});
        m.add_return(
            {m.add_instruction(op::reduce{op::reduce_kind::mean, {2, 3, 4}, true, false}, {v})});
    };
    // 8 * 6 = 48 outputs when W and H go first (>= 40), 8 * 48 = 384 when W alone does.
    auto both = transform_and_compare(
        build, [](module& m) { split_reduction{.target_outputs = 40}.apply(m); });
    EXPECT_EQ(reduction_axes(both.main())[0], (std::vector<std::int64_t>{3, 4}))
        << both.to_string();
    auto one = transform_and_compare(
        build, [](module& m) { split_reduction{.target_outputs = 100}.apply(m); });
    EXPECT_EQ(reduction_axes(one.main())[0], (std::vector<std::int64_t>{4})) << one.to_string();
}

TEST(split_reduction, reductions_it_cannot_split_exactly_or_profitably_stay_whole) {
    auto whole = [](const module_builder& b, split_reduction s = {}) {
        auto p = transform_and_compare(b, [&](module& m) { s.apply(m); });
        return reduction_axes(p.main()).size() == 1;
    };
    // A 16-bit partial sum could overflow; prod, l2 etc. are not sums of parts.
    EXPECT_TRUE(whole(channels_last_pool(op::reduce_kind::sum, {2, 9, 11, 3}, true, dtype::f16)));
    EXPECT_TRUE(whole(channels_last_pool(op::reduce_kind::l2, {2, 9, 11, 3})));
    EXPECT_TRUE(whole(channels_last_pool(op::reduce_kind::prod, {2, 9, 11, 3})));
    // Standard NCHW data: the fastest axis (W) is reduced, the kernel reads rows contiguously.
    EXPECT_TRUE(whole([](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {2, 3, 9, 11}});
        m.add_return(
            {m.add_instruction(op::reduce{op::reduce_kind::mean, {2, 3}, true, false}, {x})});
    }));
    // One reduced axis; short rows; enough outputs already.
    EXPECT_TRUE(whole([](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {2, 99, 3}});
        m.add_return({m.add_instruction(op::reduce{op::reduce_kind::mean, {1}, true, false}, {x})});
    }));
    EXPECT_TRUE(whole(channels_last_pool(op::reduce_kind::mean, {2, 4, 4, 3})));
    EXPECT_TRUE(whole(channels_last_pool(op::reduce_kind::mean, {2, 9, 11, 3}),
                      split_reduction{.max_outputs = 6}));
}

TEST(split_reduction, a_16_bit_mean_splits_within_the_dtype_rounding) {
    auto p = transform_and_compare(
        channels_last_pool(op::reduce_kind::mean, {2, 9, 11, 3}, true, dtype::f16), run_split,
        2e-3);
    EXPECT_EQ(reduction_axes(p.main()).size(), 2u) << p.to_string();
}

} // namespace

} // namespace split_reduction_test
