#include "conflux/passes/layout.hpp"

#include "conflux/ops/convolution.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/pooling.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/dce.hpp"
#include "conflux/passes/simplify.hpp"

#include "unit/pass_test_helpers.hpp"

#include <gtest/gtest.h>

namespace layout_test {

using namespace conflux;
using test::count_named;
using test::product;
using test::random_literal;
using test::random_values;
using test::transform_and_print;

namespace {

std::vector<std::int64_t> to_last(std::size_t rank) {
    std::vector<std::int64_t> p{0};
    for (std::size_t i = 2; i < rank; ++i)
        p.push_back(std::int64_t(i));
    p.push_back(1);
    return p;
}

argument transposed(const argument& a, const std::vector<std::int64_t>& perm) {
    op::transpose t{perm};
    return t.eval(t.compute_shape({a.get_shape()}), {a}).contiguous();
}

struct config {
    dims x, w;
    op::convolution conv;
};

void layout_only(module& m) {
    layout_nhwc{}.apply(m);
    dce{}.apply(m);
}

void layout_then_simplify(module& m) {
    layout_nhwc{}.apply(m);
    simplify{}.apply(m);
    dce{}.apply(m);
}

} // namespace

TEST(convolution, channels_last_matches_nchw_on_transposed_data) {
    const std::vector<config> configs = {
        {{2, 3, 9}, {4, 3, 3}, {{1, 2}, {2}, {}, 1}},                               // 1-D
        {{2, 4, 7, 6}, {6, 2, 3, 2}, {{1, 0, 2, 1}, {2, 1}, {1, 2}, 2}},            // 2-D groups
        {{1, 4, 6, 6}, {4, 1, 3, 3}, {{1, 1, 1, 1}, {2, 2}, {}, 4}},                // depthwise
        {{1, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, {{1, 0, 1, 0, 1, 1}, {1, 2, 1}, {}, 1}}, // 3-D
    };
    std::mt19937 rng(9);
    for (const auto& c : configs) {
        SCOPED_TRACE(testing::Message() << "x " << to_string(c.x) << " w " << to_string(c.w));
        auto x = from_vector(dtype::f32, c.x, random_values(product(c.x), rng));
        auto w = from_vector(dtype::f32, c.w, random_values(product(c.w), rng));
        auto y = c.conv.eval(c.conv.compute_shape({x.get_shape(), w.get_shape()}), {x, w});

        auto cl = c.conv;
        cl.channels_last = true;
        const auto perm = to_last(c.x.size());
        auto xc = transposed(x, perm);
        auto wc = transposed(w, perm);
        auto s = cl.compute_shape({xc.get_shape(), wc.get_shape()});
        EXPECT_EQ(s, (shape{dtype::f32, transposed(y, perm).get_shape().lens()}));
        auto yc = cl.eval(s, {xc, wc});
        EXPECT_TRUE(yc.same_values(transposed(y, perm)));
        // Strided (NCHW-ordered memory seen as NHWC) inputs give the same values.
        auto xv = x.view(op::transpose{perm}.compute_shape({x.get_shape()}));
        EXPECT_TRUE(cl.eval(s, {xv, wc}).same_values(yc));
    }
}

TEST(convolution, channels_last_attribute_printed_only_when_set) {
    op::convolution c{{1, 1}, {1}, {1}, 1};
    EXPECT_FALSE(c.attributes().contains("channels_last"));
    c.channels_last = true;
    EXPECT_EQ(c.attributes().at("channels_last"), true);
    EXPECT_FALSE(op::convolution{} == c);
    // Channels-last checks the channel count on the last axis.
    EXPECT_THROW(c.compute_shape({shape{dtype::f32, {1, 5, 3}}, shape{dtype::f32, {2, 1, 5}}}),
                 user_error);
}

TEST(layout, rewrites_convolution_to_channels_last_between_transposes) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {1, 3, 6, 5}});
        auto w = m.add_literal(random_literal({4, 3, 3, 3}, 1));
        m.add_return({m.add_instruction(op::convolution{{1, 1, 1, 1}, {2, 1}, {}, 1}, {x, w})});
    };
    auto text = transform_and_print(build, layout_only);
    program p;
    build(p.main());
    layout_only(p.main());
    EXPECT_EQ(count_named(p.main(), "transpose"), 3u) << text; // input, weights, output
    EXPECT_NE(text.find("\"channels_last\":true"), std::string::npos) << text;
    // Simplify folds the weights' transpose into a KRSC literal.
    program q;
    build(q.main());
    layout_then_simplify(q.main());
    EXPECT_EQ(count_named(q.main(), "transpose"), 2u) << q.main().to_string();
    for (auto& ins : q.main())
        if (ins.name() == "convolution") {
            EXPECT_TRUE(ins.inputs()[1]->is_literal());
        }
}

TEST(layout, conv_bias_relu_conv_chain_keeps_only_boundary_transposes) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {2, 3, 8, 7}});
        auto w1 = m.add_literal(random_literal({4, 3, 3, 3}, 1));
        auto c1 = m.add_instruction(op::convolution{{1, 1, 1, 1}, {}, {}, 1}, {x, w1});
        auto b = m.add_literal(random_literal({4, 1, 1}, 2));
        auto bb = m.add_instruction(op::broadcast{{2, 4, 8, 7}}, {b});
        auto a = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {c1, bb});
        auto r = m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {a});
        auto w2 = m.add_literal(random_literal({6, 2, 3, 1}, 3));
        auto c2 = m.add_instruction(op::convolution{{0, 0, 0, 0}, {2, 1}, {}, 2}, {r, w2});
        m.add_return({c2});
    };
    auto text = transform_and_print(build, layout_then_simplify, 1e-5);
    program p;
    build(p.main());
    layout_then_simplify(p.main());
    EXPECT_EQ(count_named(p.main(), "transpose"), 2u) << text;
    EXPECT_EQ(count_named(p.main(), "convolution"), 2u) << text;
    for (auto& ins : p.main())
        if (ins.name() == "convolution") {
            EXPECT_TRUE(ins.get_operator().get_if<op::convolution>()->channels_last) << text;
        }
}

TEST(layout, one_d_convolution_and_non_literal_weights) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {2, 4, 9}});
        auto w = m.add_parameter("w", shape{dtype::f32, {3, 4, 2}});
        auto c = m.add_instruction(op::convolution{{1, 0}, {2}, {}, 1}, {x, w});
        m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {c})});
    };
    auto text = transform_and_print(build, layout_then_simplify);
    // Input, weights (a parameter: not folded) and output.
    program p;
    build(p.main());
    layout_then_simplify(p.main());
    EXPECT_EQ(count_named(p.main(), "transpose"), 3u) << text;
}

TEST(layout, pooling_after_convolution_runs_channels_last) {
    // conv -> relu -> max_pool -> conv and a global average pool: both read NHWC data, so the
    // max pool becomes channels-last, the global pool a mean over the NHWC spatial axes
    // (simplify), and only the model's boundary transposes remain.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {2, 3, 9, 9}});
        auto w1 = m.add_literal(random_literal({4, 3, 3, 3}, 1));
        auto c1 = m.add_instruction(op::convolution{{1, 1, 1, 1}, {}, {}, 1}, {x, w1});
        auto r = m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {c1});
        auto mp = m.add_instruction(
            op::pooling{op::pooling_mode::max, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false, false},
            {r});
        auto w2 = m.add_literal(random_literal({5, 4, 1, 1}, 2));
        auto c2 = m.add_instruction(op::convolution{{0, 0, 0, 0}, {}, {}, 1}, {mp, w2});
        auto gp = m.add_instruction(
            op::pooling{op::pooling_mode::average, {5, 5}, {}, {}, {}, false, false}, {c2});
        m.add_return({gp});
    };
    auto text = transform_and_print(build, layout_then_simplify, 1e-5);
    program p;
    build(p.main());
    layout_then_simplify(p.main());
    std::size_t channels_last_pools = 0;
    for (auto& ins : p.main())
        if (const auto* pool = ins.get_operator().get_if<op::pooling>())
            channels_last_pools += pool->channels_last ? 1 : 0;
    EXPECT_EQ(channels_last_pools, 1u) << text;
    EXPECT_EQ(count_named(p.main(), "reduce_mean"), 1u) << text;
    EXPECT_EQ(count_named(p.main(), "transpose"), 2u) << text; // the input's and the output's
}

TEST(layout, pooling_of_nchw_data_is_left_alone) {
    // Rewriting it would add two real copies for nothing.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {1, 3, 6, 6}});
        m.add_return({m.add_instruction(
            op::pooling{op::pooling_mode::max, {2, 2}, {2, 2}, {}, {}, false, false}, {x})});
    };
    auto text = transform_and_print(build, layout_then_simplify);
    program p;
    build(p.main());
    layout_then_simplify(p.main());
    EXPECT_EQ(count_named(p.main(), "transpose"), 0u) << text;
    for (auto& ins : p.main())
        if (const auto* pool = ins.get_operator().get_if<op::pooling>()) {
            EXPECT_FALSE(pool->channels_last) << text;
        }
}

} // namespace layout_test
