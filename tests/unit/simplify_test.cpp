#include "conflux/passes/simplify.hpp"

#include "conflux/ops/convolution.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/dce.hpp"

#include "unit/pass_test_helpers.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace simplify_test {

using namespace conflux;
using test::count_named;
using test::random_literal;
using test::transform_and_print;

namespace {

const shape f32(const dims& lens) {
    return {dtype::f32, lens};
}

op::elementwise ew(op::elementwise_kind k) {
    return op::make_elementwise(k);
}
constexpr auto add = op::elementwise_kind::add;
constexpr auto mul = op::elementwise_kind::mul;
constexpr auto relu = op::elementwise_kind::relu;

void run_simplify(module& m) {
    simplify{}.apply(m);
    dce{}.apply(m);
}

// Builds the expected module and returns its text.
std::string text_of(const test::module_builder& build) {
    program p;
    build(p.main());
    return p.main().to_string();
}

} // namespace

TEST(simplify, folds_constants_into_one_literal) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3}));
        auto a = m.add_literal(random_literal({2, 3}, 1));
        auto b = m.add_literal(random_literal({3, 2}, 2));
        auto bt = m.add_instruction(op::transpose{{1, 0}}, {b});
        auto c = m.add_instruction(ew(add), {a, bt});
        m.add_return({m.add_instruction(ew(mul), {x, c})});
    };
    auto text = transform_and_print(build, run_simplify);
    program p;
    build(p.main());
    run_simplify(p.main());
    EXPECT_EQ(count_named(p.main(), "@literal"), 1u) << text;
    EXPECT_EQ(count_named(p.main(), "add"), 0u) << text;
    EXPECT_EQ(count_named(p.main(), "transpose"), 0u) << text;
    // The folded value is standard even though one input was a transposed view.
    for (auto& ins : p.main())
        if (ins.is_literal()) {
            EXPECT_TRUE(ins.get_shape().standard());
        }
}

TEST(simplify, keeps_broadcast_of_literal_and_large_constants_that_grow) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({4, 3}));
        auto b = m.add_literal(random_literal({3}, 1));
        auto bb = m.add_instruction(op::broadcast{{4, 3}}, {b});
        auto half1 = m.add_literal(random_literal({2, 3}, 2));
        auto half2 = m.add_literal(random_literal({2, 3}, 3));
        auto big = m.add_instruction(op::concat{0}, {half1, half2});
        auto y = m.add_instruction(ew(add), {x, bb});
        m.add_return({m.add_instruction(ew(mul), {y, big})});
    };
    auto small_limit = [](module& m) {
        simplify{.max_fold_elements = 4}.apply(m);
        dce{}.apply(m);
    };
    // Nothing changes: the broadcast stays a view, the 12-element concat of two 6-element
    // constants is over the limit and larger than either.
    EXPECT_EQ(transform_and_print(build, small_limit), text_of(build));
}

// Over the limit but no larger than an input (an --fp16 conversion of a large embedding table, a
// sum of two weights): folded, so no run computes it again.
TEST(simplify, folds_large_constants_no_larger_than_an_input) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({4, 3}));
        auto w1 = m.add_literal(random_literal({4, 3}, 2));
        auto w2 = m.add_literal(random_literal({4, 3}, 3));
        auto sum = m.add_instruction(ew(add), {w1, w2});
        auto half = m.add_instruction(op::make_convert(dtype::f16), {sum});
        auto back = m.add_instruction(op::make_convert(dtype::f32), {half});
        m.add_return({m.add_instruction(ew(mul), {x, back})});
    };
    auto small_limit = [](module& m) {
        simplify{.max_fold_elements = 4}.apply(m);
        dce{}.apply(m);
    };
    auto p = test::transform_and_compare(build, small_limit, 0);
    EXPECT_EQ(count_named(p.main(), "add"), 0u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "convert"), 0u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "mul"), 1u);
}

namespace {

// x -> convolution(@w) -> batch_normalization(@scale, @bias, @mean, @var) [-> also returned]
test::module_builder conv_bn(bool conv_used_twice) {
    return [=](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 6, 5}));
        auto w = m.add_literal(random_literal({4, 3, 3, 3}, 1));
        auto conv = m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 2}, {}, 1}, {x, w});
        auto scale = m.add_literal(random_literal({4}, 2, 0.5f, 2));
        auto bias = m.add_literal(random_literal({4}, 3));
        auto mean = m.add_literal(random_literal({4}, 4));
        auto var = m.add_literal(random_literal({4}, 5, 0.1f, 1));
        auto bn = m.add_instruction(op::batch_norm{1e-3f}, {conv, scale, bias, mean, var});
        if (conv_used_twice)
            m.add_return({bn, conv});
        else
            m.add_return({bn});
    };
}

} // namespace

TEST(simplify, folds_batch_norm_into_convolution_weights) {
    auto text = transform_and_print(conv_bn(false), run_simplify, 1e-4);
    program p;
    conv_bn(false)(p.main());
    run_simplify(p.main());
    EXPECT_EQ(count_named(p.main(), "batch_normalization"), 0u) << text;
    EXPECT_EQ(count_named(p.main(), "convolution"), 1u) << text;
    EXPECT_EQ(count_named(p.main(), "add"), 1u) << text;
    EXPECT_EQ(count_named(p.main(), "broadcast"), 1u) << text;
    // New weights and the [4,1,1] bias.
    EXPECT_EQ(count_named(p.main(), "@literal"), 2u) << text;
}

TEST(simplify, batch_norm_after_a_shared_convolution_is_a_multiply_add_not_folded) {
    // The other user needs the unscaled output, so the weights stay; the norm becomes the
    // per-channel multiply-add that fuses into the convolution's epilogue.
    auto text = transform_and_print(conv_bn(true), run_simplify, 1e-4);
    program p;
    conv_bn(true)(p.main());
    run_simplify(p.main());
    EXPECT_EQ(count_named(p.main(), "batch_normalization"), 0u) << text;
    EXPECT_EQ(count_named(p.main(), "convolution"), 1u) << text;
    EXPECT_EQ(count_named(p.main(), "mul"), 1u) << text;
    EXPECT_EQ(count_named(p.main(), "add"), 1u) << text;
}

TEST(simplify, batch_norm_without_a_convolution_becomes_a_multiply_add) {
    // DenseNet's norm of a concatenation: no weights to fold it into, so it becomes x * s + b'
    // per channel (s = scale / sqrt(var + eps), b' = bias - mean * s), elementwise ops that
    // fuse with the ReLU after it. Compared with the reference's batch norm on random inputs.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 4, 3, 5}));
        auto y = m.add_parameter("y", f32({2, 3, 3, 5}));
        auto cat = m.add_instruction(op::concat{1}, {x, y}); // [2,7,3,5]
        auto scale = m.add_literal(random_literal({7}, 2, 0.5f, 2));
        auto bias = m.add_literal(random_literal({7}, 3));
        auto mean = m.add_literal(random_literal({7}, 4));
        auto var = m.add_literal(random_literal({7}, 5, 0.1f, 1));
        auto bn = m.add_instruction(op::batch_norm{1e-3f}, {cat, scale, bias, mean, var});
        m.add_return({m.add_instruction(ew(relu), {bn})});
    };
    auto text = transform_and_print(build, run_simplify, 1e-5);
    program p;
    build(p.main());
    run_simplify(p.main());
    EXPECT_EQ(count_named(p.main(), "batch_normalization"), 0u) << text;
    EXPECT_EQ(count_named(p.main(), "mul"), 1u) << text;
    EXPECT_EQ(count_named(p.main(), "add"), 1u) << text;
    // Both constants are [7,1,1], broadcast along the image.
    EXPECT_EQ(count_named(p.main(), "broadcast"), 2u) << text;
    EXPECT_NE(text.find("f32[7,1,1]"), std::string::npos) << text;
}

TEST(simplify, batch_norm_of_a_rank_2_input_scales_its_second_axis) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({3, 6}));
        auto scale = m.add_literal(random_literal({6}, 2, 0.5f, 2));
        auto bias = m.add_literal(random_literal({6}, 3));
        auto mean = m.add_literal(random_literal({6}, 4));
        auto var = m.add_literal(random_literal({6}, 5, 0.1f, 1));
        m.add_return({m.add_instruction(op::batch_norm{1e-5f}, {x, scale, bias, mean, var})});
    };
    auto text = transform_and_print(build, run_simplify, 1e-5);
    EXPECT_EQ(text.find("batch_normalization"), std::string::npos) << text;
}

TEST(simplify, batch_norm_with_statistics_from_an_input_stays) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        auto mean = m.add_parameter("mean", f32({3}));
        auto scale = m.add_literal(random_literal({3}, 2, 0.5f, 2));
        auto bias = m.add_literal(random_literal({3}, 3));
        auto var = m.add_literal(random_literal({3}, 5, 0.1f, 1));
        m.add_return({m.add_instruction(op::batch_norm{1e-5f}, {x, scale, bias, mean, var})});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(build));
}

TEST(simplify, moves_transposes_through_a_concat_until_they_cancel) {
    // DenseNet after layout_nhwc: channels-last features seen as NCHW, concatenated on the
    // channel axis, normalised, then transposed back for the next convolution. The concat is
    // then on NHWC's channel axis (3) and no transpose is left.
    const std::vector<std::int64_t> to_nchw{0, 3, 1, 2}, to_nhwc{0, 2, 3, 1};
    auto build = [&](module& m) {
        auto a = m.add_parameter("a", f32({2, 5, 6, 3}));
        auto b = m.add_parameter("b", f32({2, 5, 6, 4}));
        auto c = m.add_parameter("c", f32({2, 5, 6, 2}));
        std::vector<instruction_ref> parts;
        for (auto* in : {a, b, c})
            parts.push_back(m.add_instruction(op::transpose{to_nchw}, {in}));
        auto cat = m.add_instruction(op::concat{1}, parts); // [2,9,5,6]
        auto r = m.add_instruction(ew(relu), {cat});
        m.add_return({m.add_instruction(op::transpose{to_nhwc}, {r})});
    };
    auto text = transform_and_print(build, run_simplify);
    EXPECT_EQ(text.find("transpose"), std::string::npos) << text;
    EXPECT_NE(text.find("concat{\"axis\":3}"), std::string::npos) << text;
}

TEST(simplify, keeps_a_concat_of_different_transposes) {
    auto build = [](module& m) {
        auto a = m.add_parameter("a", f32({2, 3, 4}));
        auto b = m.add_parameter("b", f32({2, 4, 3}));
        auto ta = m.add_instruction(op::transpose{{0, 2, 1}}, {a}); // [2,4,3]
        m.add_return({m.add_instruction(op::concat{0}, {ta, b})});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(build));
}

TEST(simplify, removes_identity_views) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        auto t = m.add_instruction(op::transpose{{0, 1, 2}}, {x});
        auto r = m.add_instruction(op::reshape{{2, 3, 4}}, {t});
        auto s = m.add_instruction(op::slice{{0, 2}, {0, 0}, {2, 100}, {}}, {r});
        auto b = m.add_instruction(op::broadcast{{2, 3, 4}}, {s});
        m.add_return({m.add_instruction(ew(relu), {b})});
    };
    auto expected = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        m.add_return({m.add_instruction(ew(relu), {x})});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(expected));
}

TEST(simplify, keeps_reversing_slice_and_real_views) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3}));
        auto s = m.add_instruction(op::slice{{1}, {-1}, {-100}, {-1}}, {x});
        auto t = m.add_instruction(op::transpose{{1, 0}}, {s});
        m.add_return({t});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(build));
}

TEST(simplify, cancels_inverse_transposes) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        auto a = m.add_instruction(op::transpose{{1, 2, 0}}, {x});
        auto b = m.add_instruction(op::transpose{{2, 0, 1}}, {a});
        m.add_return({m.add_instruction(ew(relu), {b})});
    };
    auto expected = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        m.add_return({m.add_instruction(ew(relu), {x})});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(expected));
}

TEST(simplify, merges_transposes_that_do_not_cancel) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        auto a = m.add_instruction(op::transpose{{1, 2, 0}}, {x});
        auto b = m.add_instruction(op::transpose{{1, 2, 0}}, {a});
        m.add_return({b});
    };
    auto expected = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        m.add_return({m.add_instruction(op::transpose{{2, 0, 1}}, {x})});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(expected));
}

TEST(simplify, merges_reshape_chains) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        auto f = m.add_instruction(op::flatten{1}, {x});
        auto u = m.add_instruction(op::unsqueeze{{0}}, {f});
        auto r = m.add_instruction(op::reshape{{6, 4}}, {u});
        // A chain that comes back to x's lens disappears.
        auto back =
            m.add_instruction(op::reshape{{2, 3, 4}}, {m.add_instruction(op::flatten{2}, {x})});
        m.add_return({r, m.add_instruction(ew(relu), {back})});
    };
    auto expected = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        auto r = m.add_instruction(op::reshape{{6, 4}}, {x});
        m.add_return({r, m.add_instruction(ew(relu), {x})});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(expected));
}

TEST(simplify, cancels_transpose_reshape_pairs_that_only_move_unit_axes) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({1, 2, 3}));
        auto t = m.add_instruction(op::transpose{{1, 0, 2}}, {x}); // [2,1,3]
        auto r = m.add_instruction(op::reshape{{1, 2, 3}}, {t});
        auto y = m.add_parameter("y", f32({2, 1, 3}));
        auto ry = m.add_instruction(op::reshape{{1, 2, 3}}, {y});
        auto ty = m.add_instruction(op::transpose{{1, 0, 2}}, {ry}); // [2,1,3]
        m.add_return({m.add_instruction(ew(relu), {r}), m.add_instruction(ew(relu), {ty})});
    };
    auto expected = [](module& m) {
        auto x = m.add_parameter("x", f32({1, 2, 3}));
        auto y = m.add_parameter("y", f32({2, 1, 3}));
        m.add_return({m.add_instruction(ew(relu), {x}), m.add_instruction(ew(relu), {y})});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(expected));
}

TEST(simplify, keeps_transpose_reshape_pairs_that_reorder_elements) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3}));
        auto t = m.add_instruction(op::transpose{{1, 0}}, {x}); // [3,2]
        m.add_return({m.add_instruction(op::reshape{{2, 3}}, {t})});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(build));
}

// nn.MultiheadAttention's head split of a sequence-first view of a batch-first [b, s, h * d]
// tensor: reshape [s, b * h, d] (b and h are not adjacent in memory, so it copies), transpose,
// reshape [b, h, s, d]. The whole chain is a view: a split of h * d and a transpose.
TEST(simplify, a_chain_of_views_with_a_copy_becomes_a_view) {
    auto heads = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 5, 12}));             // [b, s, h * d]
        auto xt = m.add_instruction(op::transpose{{1, 0, 2}}, {x}); // [s, b, h * d]
        auto r = m.add_instruction(op::reshape{{5, 6, 4}}, {xt});   // [s, b * h, d]: a copy
        auto t = m.add_instruction(op::transpose{{1, 0, 2}}, {r});
        auto q = m.add_instruction(op::reshape{{2, 3, 5, 4}}, {t}); // [b, h, s, d]
        m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::neg), {q})});
    };
    ASSERT_FALSE(op::reshape_as_view(shape{dtype::f32, {5, 2, 12}, {12, 60, 1}}, {5, 6, 4}));
    // Every reshape left reads its input as a view.
    auto expect_views_only = [](const program& p) {
        for (const auto& ins : p.main())
            if (ins.name() == "reshape") {
                EXPECT_TRUE(
                    op::reshape_as_view(ins.inputs()[0]->get_shape(), ins.get_shape().lens()))
                    << p.to_string();
            }
    };
    expect_views_only(test::transform_and_compare(heads, run_simplify, 0));
    // The k of the same attention, transposed to [b, h, d, s], and a chain whose reshapes
    // would cut an axis unevenly (kept as it was).
    auto keys = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 5, 12}));
        auto xt = m.add_instruction(op::transpose{{1, 0, 2}}, {x});
        auto r = m.add_instruction(op::reshape{{5, 6, 4}}, {xt});
        auto t = m.add_instruction(op::transpose{{1, 2, 0}}, {r});
        m.add_return({m.add_instruction(op::reshape{{2, 3, 4, 5}}, {t})});
    };
    expect_views_only(test::transform_and_compare(keys, run_simplify, 0));
    auto uneven = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 6, 4}));
        auto xt = m.add_instruction(op::transpose{{1, 0, 2}}, {x}); // [6, 2, 4]
        auto r = m.add_instruction(op::reshape{{4, 12}}, {xt});     // cuts 6 x 2 into 4 x 3
        m.add_return({m.add_instruction(op::transpose{{1, 0}}, {r})});
    };
    EXPECT_EQ(transform_and_print(uneven, run_simplify), text_of(uneven));
}

TEST(simplify, moves_transposes_through_elementwise_ops_until_they_cancel) {
    const std::vector<std::int64_t> p{0, 2, 1};
    auto build = [&](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        auto y = m.add_parameter("y", f32({2, 3, 4}));
        auto tx = m.add_instruction(op::transpose{p}, {x}); // [2,4,3]
        auto ty = m.add_instruction(op::transpose{p}, {y});
        auto a = m.add_instruction(ew(add), {tx, ty});
        auto c = m.add_literal(random_literal({2, 4, 3}, 1));
        auto b =
            m.add_instruction(op::broadcast{{2, 4, 3}}, {m.add_literal(random_literal({3}, 2))});
        auto s = m.add_instruction(ew(mul), {a, c});
        auto r = m.add_instruction(ew(relu), {m.add_instruction(ew(add), {s, b})});
        m.add_return({m.add_instruction(op::transpose{p}, {r})});
    };
    auto text = transform_and_print(build, run_simplify);
    program q;
    build(q.main());
    run_simplify(q.main());
    EXPECT_EQ(count_named(q.main(), "transpose"), 0u) << text;
    // The broadcast constant now broadcasts a [1,3,1] literal along x's own axes.
    EXPECT_EQ(count_named(q.main(), "broadcast"), 1u) << text;
    EXPECT_NE(text.find("broadcast{\"out_lens\":[2,3,4]}"), std::string::npos) << text;
}

TEST(simplify, moves_transposes_through_a_product_with_a_broadcast_of_a_transpose) {
    // Squeeze-and-excitation after layout_nhwc: x * s with both from convolutions (NHWC data
    // seen as NCHW), s [N,C,1,1] broadcast over the image; the projection reads the product NHWC.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 5, 6, 3}));
        auto s = m.add_parameter("s", f32({2, 1, 1, 3}));
        auto tx = m.add_instruction(op::transpose{{0, 3, 1, 2}}, {x}); // [2,3,5,6]
        auto ts = m.add_instruction(op::transpose{{0, 3, 1, 2}}, {s}); // [2,3,1,1]
        auto bs = m.add_instruction(op::broadcast{{2, 3, 5, 6}}, {ts});
        auto y = m.add_instruction(ew(mul), {tx, bs});
        m.add_return({m.add_instruction(op::transpose{{0, 2, 3, 1}}, {y})});
    };
    auto p = test::transform_and_compare(build, run_simplify, 0);
    EXPECT_EQ(count_named(p.main(), "transpose"), 0u) << p.to_string();
    EXPECT_NE(p.to_string().find("broadcast{\"out_lens\":[2,5,6,3]}"), std::string::npos)
        << p.to_string();
    // Only broadcasts of transposes (no transposed input of its own): nothing moves. (A relu of
    // the broadcast alone would be computed before it, on s's 6 values: simplify_broadcast_
    // elementwise.)
    auto only_broadcasts = [](module& m) {
        auto s = m.add_parameter("s", f32({2, 1, 1, 3}));
        auto z = m.add_parameter("z", f32({2, 3, 5, 6}));
        auto ts = m.add_instruction(op::transpose{{0, 3, 1, 2}}, {s});
        auto bs = m.add_instruction(op::broadcast{{2, 3, 5, 6}}, {ts});
        m.add_return({m.add_instruction(ew(add), {bs, z}), m.add_instruction(ew(mul), {bs, z})});
    };
    EXPECT_EQ(transform_and_print(only_broadcasts, run_simplify), text_of(only_broadcasts));
}

TEST(simplify, moves_reshapes_after_elementwise_ops_with_scalar_constants) {
    // Hugging Face's head split: q = reshape(dot + bias) * scale; the scale joins the bias.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 8, 16}));
        auto w = m.add_literal(random_literal({16, 16}, 1));
        auto bias =
            m.add_instruction(op::broadcast{{2, 8, 16}}, {m.add_literal(random_literal({16}, 2))});
        auto q = m.add_instruction(ew(add), {m.add_instruction(op::dot{}, {x, w}), bias});
        auto heads = m.add_instruction(op::reshape{{2, 8, 4, 4}}, {q});
        auto scale = m.add_instruction(op::broadcast{{2, 8, 4, 4}},
                                       {m.add_literal(random_literal({1, 1, 1, 1}, 3))});
        m.add_return({m.add_instruction(ew(mul), {heads, scale})});
    };
    auto p = test::transform_and_compare(build, run_simplify, 0);
    const auto text = p.to_string();
    // The product feeds the add (the bias, reshaped with it as a broadcast), the add the mul,
    // the mul the reshape, which is returned.
    instruction_ref mul_ins = nullptr;
    for (auto& ins : p.main())
        if (ins.name() == "mul") mul_ins = &ins;
    ASSERT_NE(mul_ins, nullptr) << text;
    EXPECT_EQ(mul_ins->get_shape().elements(), 256u) << text;
    EXPECT_NE(mul_ins->get_shape().lens(), (dims{2, 8, 4, 4})) << text;
    ASSERT_EQ(mul_ins->outputs().size(), 1u) << text;
    EXPECT_EQ(mul_ins->outputs().front()->name(), "reshape") << text;
    EXPECT_EQ(mul_ins->inputs()[0]->name(), "add") << text;
    // Kept: a reshape of a parameter (nothing to join).
    auto kept = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 8, 16}));
        auto r = m.add_instruction(op::reshape{{2, 8, 4, 4}}, {x});
        auto s =
            m.add_instruction(op::broadcast{{2, 8, 4, 4}}, {m.add_literal(random_literal({1}, 4))});
        m.add_return({m.add_instruction(ew(mul), {r, s})});
    };
    EXPECT_EQ(transform_and_print(kept, run_simplify), text_of(kept));
    // A whole constant moves as its literal in the other shape (the same values, no copy).
    auto constant = [](module& m) {
        auto y = m.add_parameter("y", f32({2, 8, 16}));
        auto e = m.add_instruction(ew(relu), {y});
        auto re = m.add_instruction(op::reshape{{2, 8, 4, 4}}, {e});
        auto c = m.add_literal(random_literal({2, 8, 4, 4}, 5));
        m.add_return({m.add_instruction(ew(add), {re, c})});
    };
    const auto moved = transform_and_print(constant, run_simplify, 0);
    EXPECT_NE(moved.find("@literal -> f32[2,8,16]"), std::string::npos) << moved;
}

TEST(simplify, keeps_transposes_of_different_permutations_or_beside_other_values) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({3, 3, 3}));
        auto y = m.add_parameter("y", f32({3, 3, 3}));
        auto tx = m.add_instruction(op::transpose{{0, 2, 1}}, {x});
        auto ty = m.add_instruction(op::transpose{{2, 1, 0}}, {y});
        auto a = m.add_instruction(ew(add), {tx, ty});
        // Another transpose beside a plain (non-constant) value cannot move either.
        auto b = m.add_instruction(ew(mul), {m.add_instruction(op::transpose{{0, 2, 1}}, {y}), x});
        m.add_return({a, b});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(build));
}

TEST(simplify, transposes_that_do_not_cancel_end_up_as_one) {
    // transpose{P} -> relu -> transpose{Q} with Q != P^-1: one transpose survives.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 3, 4}));
        auto t = m.add_instruction(op::transpose{{1, 0, 2}}, {x});
        auto r = m.add_instruction(ew(relu), {t});
        m.add_return({m.add_instruction(op::transpose{{0, 2, 1}}, {r})});
    };
    auto text = transform_and_print(build, run_simplify);
    program q;
    build(q.main());
    run_simplify(q.main());
    EXPECT_EQ(count_named(q.main(), "transpose"), 1u) << text;
}

TEST(simplify, gather_of_one_constant_index_becomes_a_view) {
    // q, k, v picked out of a packed projection: index 2, -3 (= 0) and [1] (keeps the axis).
    auto build = [](module& m) {
        auto x = m.add_parameter("x", f32({3, 4, 5}));
        auto y = m.add_instruction(ew(relu), {x});
        auto i2 = m.add_literal(from_vector(dtype::i64, {}, std::vector<std::int64_t>{2}));
        auto im3 = m.add_literal(from_vector(dtype::i32, {}, std::vector<std::int32_t>{-3}));
        auto i1 = m.add_literal(from_vector(dtype::i64, {1}, std::vector<std::int64_t>{1}));
        auto a = m.add_instruction(op::gather{0}, {y, i2});
        auto b = m.add_instruction(op::gather{0}, {y, im3});
        auto c = m.add_instruction(op::gather{1}, {y, i1});
        m.add_return({a, b, c});
    };
    auto text = transform_and_print(build, run_simplify);
    EXPECT_EQ(text.find("gather"), std::string::npos) << text;
    EXPECT_NE(text.find("slice"), std::string::npos) << text;

    // An index that is not a constant, or several indices, stay a gather.
    auto kept = [](module& m) {
        auto x = m.add_parameter("x", f32({3, 4}));
        auto i = m.add_parameter("i", shape{dtype::i64, {}});
        auto two = m.add_literal(from_vector(dtype::i64, {2}, std::vector<std::int64_t>{0, 2}));
        m.add_return(
            {m.add_instruction(op::gather{0}, {x, i}), m.add_instruction(op::gather{0}, {x, two})});
    };
    program p;
    kept(p.main());
    run_simplify(p.main());
    EXPECT_EQ(count_named(p.main(), "gather"), 2u) << p.main().to_string();
}

// A batched product of one matrix (nn.MultiheadAttention's projection of its [s, b, e] input,
// MatMul by a 2-D weight) becomes one product of all the rows; the sums are the same.
TEST(simplify, a_batched_product_of_one_matrix_becomes_one_product) {
    auto by_rank = [](module& m) {
        auto x = m.add_parameter("x", f32({17, 1, 32}));
        auto w = m.add_literal(random_literal({32, 96}, 1));
        m.add_return({m.add_instruction(op::dot{}, {x, w})});
    };
    auto p = test::transform_and_compare(
        by_rank, [](module& m) { simplify{}.apply(m); }, 0);
    for (const auto& ins : p.main())
        if (ins.name() == "dot") {
            EXPECT_EQ(ins.get_shape().lens(), (dims{17, 96})) << p.to_string();
        }
    // An explicit broadcast of the weight over two batch axes; a transposed [1, s, e] activation
    // (the sequence-first view: its rows still merge).
    auto broadcast = [](module& m) {
        auto x = m.add_parameter("x", f32({2, 4, 5, 16}));
        auto w = m.add_literal(random_literal({16, 8}, 2));
        auto wb = m.add_instruction(op::broadcast{{2, 4, 16, 8}}, {w});
        auto a = m.add_instruction(op::dot{}, {x, wb});
        auto s = m.add_parameter("s", f32({1, 7, 16}));
        auto st = m.add_instruction(op::transpose{{1, 0, 2}}, {s}); // [7, 1, 16]
        auto b = m.add_instruction(op::dot{}, {st, w});
        m.add_return({a, b});
    };
    auto p2 = test::transform_and_compare(
        broadcast, [](module& m) { simplify{}.apply(m); }, 0);
    std::size_t dots = 0;
    for (const auto& ins : p2.main())
        if (ins.name() == "dot") {
            ++dots;
            EXPECT_EQ(ins.get_shape().rank(), 2u) << p2.to_string();
        }
    EXPECT_EQ(dots, 2u);
    // Rows apart in the operand's order but together in memory order (nn.MultiheadAttention's
    // sequence-first view): one product over the rows as they lie, its result transposed back.
    auto permuted = [](module& m) {
        auto x = m.add_parameter("x", f32({6, 5, 16}));
        auto xt = m.add_instruction(op::transpose{{1, 0, 2}}, {x}); // [5, 6, 16], rows apart
        auto w = m.add_literal(random_literal({16, 8}, 3));
        m.add_return({m.add_instruction(op::dot{}, {xt, w})});
    };
    auto p4 = test::transform_and_compare(
        permuted, [](module& m) { simplify{}.apply(m); }, 0);
    std::size_t permuted_dots = 0;
    for (const auto& ins : p4.main()) {
        EXPECT_NE(ins.name(), "contiguous") << p4.to_string();
        if (ins.name() == "dot") {
            ++permuted_dots;
            EXPECT_EQ(ins.get_shape().lens(), (dims{30, 8})) << p4.to_string();
            // The rows are x's own: its reshape is a view.
            EXPECT_TRUE(ins.inputs()[0]->inputs()[0]->is_param()) << p4.to_string();
        }
    }
    EXPECT_EQ(permuted_dots, 1u);
    // Kept: rows whose k is not contiguous (no order of them merges without a copy, and too few
    // rows for the copy to pay), a right operand that varies per batch entry.
    auto kept = [](module& m) {
        auto x = m.add_parameter("x", f32({6, 16, 5}));
        auto xt = m.add_instruction(op::transpose{{0, 2, 1}}, {x}); // [6, 5, 16], k apart
        auto w = m.add_literal(random_literal({16, 8}, 3));
        auto y = m.add_parameter("y", f32({5, 16, 8}));
        auto a = m.add_instruction(op::dot{}, {xt, w});
        auto b = m.add_instruction(op::dot{}, {m.add_parameter("z", f32({5, 6, 16})), y});
        m.add_return({a, b});
    };
    EXPECT_EQ(transform_and_print(kept, [](module& m) { simplify{}.apply(m); }), text_of(kept));
    // Rows apart and few per product (ViT's sequence-first projection at batch 4): one product
    // of 160 rows, not 40 products of 4-row tiles.
    auto copied = [](module& m) {
        auto x = m.add_parameter("x", f32({4, 40, 16}));
        auto xt = m.add_instruction(op::transpose{{1, 0, 2}}, {x}); // [40, 4, 16]
        auto w = m.add_literal(random_literal({16, 8}, 4));
        m.add_return({m.add_instruction(op::dot{}, {xt, w})});
    };
    auto p3 = test::transform_and_compare(
        copied, [](module& m) { simplify{}.apply(m); }, 0);
    for (const auto& ins : p3.main())
        if (ins.name() == "dot") {
            EXPECT_EQ(ins.get_shape().lens(), (dims{160, 8})) << p3.to_string();
        }
}

// The five-op GELU of the exporters, in the orders they write it: torch.onnx's
// x * 0.5 * (1 + erf(x / 1.4142)), Hugging Face's x * 0.5 * (1 + erf(x * 0.7071)) with the half
// applied last, and (x * (1 + erf(..))) / 2; constants as f16 stores them still match.
TEST(simplify, exporter_gelu_chains_become_one_gelu) {
    auto scalar = [](module& m, float v, const dims& lens) {
        auto c = m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{v}));
        return m.add_instruction(op::broadcast{lens}, {c});
    };
    enum class form { half_first, half_last, divided_by_two };
    auto chain = [&](form f, bool divide, float k) {
        return [=](module& m) {
            const dims lens{3, 5};
            auto x = m.add_parameter("x", f32(lens));
            auto s = m.add_instruction(ew(divide ? op::elementwise_kind::div : mul),
                                       {x, scalar(m, k, lens)});
            auto e = m.add_instruction(ew(op::elementwise_kind::erf), {s});
            auto h = m.add_instruction(ew(add), {scalar(m, 1, lens), e});
            instruction_ref y = nullptr;
            if (f == form::half_first) {
                auto half_x = m.add_instruction(ew(mul), {x, scalar(m, 0.5f, lens)});
                y = m.add_instruction(ew(mul), {half_x, h});
            } else if (f == form::half_last) {
                auto xh = m.add_instruction(ew(mul), {h, x});
                y = m.add_instruction(ew(mul), {xh, scalar(m, 0.5f, lens)});
            } else {
                auto xh = m.add_instruction(ew(mul), {x, h});
                y = m.add_instruction(ew(op::elementwise_kind::div), {xh, scalar(m, 2, lens)});
            }
            m.add_return({m.add_instruction(ew(relu), {y})});
        };
    };
    for (auto f : {form::half_first, form::half_last, form::divided_by_two})
        for (bool divide : {true, false}) {
            // f16's nearest values to sqrt 2 and its reciprocal.
            const float k = divide ? 1.4140625f : 0.70703125f;
            auto p = test::transform_and_compare(chain(f, divide, k), run_simplify, 2e-4);
            EXPECT_EQ(count_named(p.main(), "gelu"), 1u) << p.to_string();
            EXPECT_EQ(count_named(p.main(), "erf"), 0u) << p.to_string();
            EXPECT_EQ(count_named(p.main(), "mul") + count_named(p.main(), "div"), 0u)
                << p.to_string();
        }
    // Not GELU: another constant inside the erf, which the rewrite must not round away.
    auto p = test::transform_and_compare(chain(form::half_first, false, 0.8f), run_simplify, 0);
    EXPECT_EQ(count_named(p.main(), "gelu"), 0u) << p.to_string();
}

// An intermediate value another op also reads stays, and so does the chain.
TEST(simplify, gelu_chain_with_a_shared_intermediate_stays) {
    auto build = [](module& m) {
        const dims lens{4};
        auto c = [&](float v) {
            return m.add_instruction(
                op::broadcast{lens},
                {m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{v}))});
        };
        auto x = m.add_parameter("x", f32(lens));
        auto e = m.add_instruction(ew(op::elementwise_kind::erf),
                                   {m.add_instruction(ew(mul), {x, c(0.70710678f)})});
        auto h = m.add_instruction(ew(add), {e, c(1)});
        auto y = m.add_instruction(ew(mul), {m.add_instruction(ew(mul), {x, c(0.5f)}), h});
        m.add_return({y, e});
    };
    auto p = test::transform_and_compare(build, run_simplify, 0);
    EXPECT_EQ(count_named(p.main(), "gelu"), 0u) << p.to_string();
}

// Hugging Face's mask for unpadded inputs: where(range(s) >= 0, 0, -inf) broadcast to
// [batch, 1, s, s] is computed once per query position, not materialised per batch and key.
TEST(simplify, an_elementwise_op_of_broadcast_constants_folds_to_its_distinct_values) {
    auto build = [](module& m) {
        const dims lens{2, 1, 5, 5};
        auto x = m.add_parameter("x", f32(lens));
        auto mask =
            m.add_literal(from_vector(dtype::boolean, {5, 1}, std::vector<float>{1, 0, 1, 1, 0}));
        auto zero = m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{0}));
        auto ninf = m.add_literal(from_vector(
            dtype::f32, {}, std::vector<float>{-std::numeric_limits<float>::infinity()}));
        auto bias = m.add_instruction(ew(op::elementwise_kind::where),
                                      {m.add_instruction(op::broadcast{lens}, {mask}),
                                       m.add_instruction(op::broadcast{lens}, {zero}),
                                       m.add_instruction(op::broadcast{lens}, {ninf})});
        m.add_return({m.add_instruction(ew(add), {x, bias})});
    };
    auto p = test::transform_and_compare(build, run_simplify, 0);
    EXPECT_EQ(count_named(p.main(), "where"), 0u) << p.to_string();
    for (const auto& ins : p.main())
        if (const auto* lit = ins.get_operator().get_if<op::literal>()) {
            EXPECT_EQ(lit->value.get_shape().lens(), (dims{1, 1, 5, 1})) << p.to_string();
        }
    // Nothing to gain when every element differs: left to find_constant's size rule.
    auto varying = [](module& m) {
        auto a = m.add_literal(random_literal({3, 4}, 1));
        auto b = m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{2}));
        m.add_return(
            {m.add_instruction(ew(mul), {a, m.add_instruction(op::broadcast{{3, 4}}, {b})})});
    };
    auto q = test::transform_and_compare(varying, run_simplify, 0);
    EXPECT_EQ(count_named(q.main(), "mul"), 0u) << q.to_string(); // folded whole
}

namespace {

// Hugging Face's encoder mask as transformers 5 writes it: where(and(all_true[1, 1, 4, 1],
// x[b, 1, 1, 5] > 0), 0, -10000) over [2, 1, 4, 5], added to scores. `constant` is the value of
// the [1, 1, 4, 1] operand, `kind` the logical op.
test::module_builder encoder_mask(std::vector<float> constant, op::elementwise_kind kind) {
    return [constant = std::move(constant), kind](module& m) {
        const dims lens{2, 1, 4, 5};
        auto x = m.add_parameter("x", f32({2, 5}));
        auto scores = m.add_parameter("scores", f32(lens));
        auto zero = m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{0}));
        auto low = m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{-10000}));
        auto keep = m.add_instruction(ew(op::elementwise_kind::greater),
                                      {x, m.add_instruction(op::broadcast{{2, 5}}, {zero})});
        auto rows = m.add_literal(from_vector(dtype::boolean, {1, 1, 4, 1}, constant));
        auto both = m.add_instruction(
            ew(kind), {m.add_instruction(op::broadcast{lens}, {rows}),
                       m.add_instruction(op::broadcast{lens},
                                         {m.add_instruction(op::reshape{{2, 1, 1, 5}}, {keep})})});
        auto bias = m.add_instruction(ew(op::elementwise_kind::where),
                                      {both, m.add_instruction(op::broadcast{lens}, {zero}),
                                       m.add_instruction(op::broadcast{lens}, {low})});
        m.add_return({m.add_instruction(ew(add), {scores, bias})});
    };
}

// The elements of the (only) where's result in `m`.
std::size_t where_elements(const module& m) {
    for (const auto& ins : m)
        if (ins.name() == "where") return ins.get_shape().elements();
    return 0;
}

} // namespace

// The all-true operand decides nothing: the and goes, and the where is computed once per batch
// entry and key (10 elements) and broadcast over the query rows, as the attention kernel reads
// a bias with a zero row stride.
TEST(simplify, an_all_true_and_goes_and_the_mask_is_computed_once_per_row) {
    auto p = test::transform_and_compare(
        encoder_mask({1, 1, 1, 1}, op::elementwise_kind::logical_and), run_simplify, 0);
    EXPECT_EQ(count_named(p.main(), "and"), 0u) << p.to_string();
    EXPECT_EQ(where_elements(p.main()), 10u) << p.to_string();
    // or with all false likewise.
    auto q = test::transform_and_compare(
        encoder_mask({0, 0, 0, 0}, op::elementwise_kind::logical_or), run_simplify, 0);
    EXPECT_EQ(count_named(q.main(), "or"), 0u) << q.to_string();
    EXPECT_EQ(where_elements(q.main()), 10u) << q.to_string();
}

// A constant that decides some elements stays, and so does the full mask it makes; so does an
// or with all true (its result is the constant, not the other operand).
TEST(simplify, a_logical_constant_that_decides_elements_stays) {
    auto p = test::transform_and_compare(
        encoder_mask({1, 0, 1, 1}, op::elementwise_kind::logical_and), run_simplify, 0);
    EXPECT_EQ(count_named(p.main(), "and"), 1u) << p.to_string();
    EXPECT_EQ(where_elements(p.main()), 40u) << p.to_string();
    auto q = test::transform_and_compare(
        encoder_mask({1, 1, 1, 1}, op::elementwise_kind::logical_or), run_simplify, 0);
    EXPECT_EQ(count_named(q.main(), "or"), 1u) << q.to_string();
}

// where(all false, a, b) is b; an elementwise op of a broadcast and a full tensor stays whole.
TEST(simplify, a_where_of_a_constant_condition_is_one_operand) {
    auto build = [](module& m) {
        const dims lens{3, 4};
        auto a = m.add_parameter("a", f32(lens));
        auto b = m.add_parameter("b", f32({4}));
        auto never = m.add_literal(from_vector(dtype::boolean, {1}, std::vector<float>{0}));
        auto w = m.add_instruction(ew(op::elementwise_kind::where),
                                   {m.add_instruction(op::broadcast{lens}, {never}), a,
                                    m.add_instruction(op::broadcast{lens}, {b})});
        m.add_return({m.add_instruction(ew(mul), {w, a})});
    };
    auto p = test::transform_and_compare(build, run_simplify, 0);
    EXPECT_EQ(count_named(p.main(), "where"), 0u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "mul"), 1u) << p.to_string();
    for (const auto& ins : p.main())
        if (ins.name() == "mul") {
            EXPECT_EQ(ins.get_shape().lens(), (dims{3, 4})) << p.to_string();
        }
}

// GPT-2's NewGELU, with the cube as pow(x, 3) and as x * x * x: the tanh form (alpha 1).
TEST(simplify, the_tanh_gelu_chain_becomes_one_gelu_with_the_tanh_form) {
    for (bool with_pow : {true, false}) {
        auto build = [=](module& m) {
            const dims lens{2, 6};
            auto c = [&](float v) {
                return m.add_instruction(
                    op::broadcast{lens},
                    {m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{v}))});
            };
            auto x = m.add_parameter("x", f32(lens));
            auto half_x = m.add_instruction(ew(mul), {x, c(0.5f)});
            auto cube = with_pow
                            ? m.add_instruction(ew(op::elementwise_kind::pow), {x, c(3)})
                            : m.add_instruction(ew(mul), {m.add_instruction(ew(mul), {x, x}), x});
            auto poly =
                m.add_instruction(ew(add), {x, m.add_instruction(ew(mul), {cube, c(0.044715f)})});
            auto t = m.add_instruction(ew(op::elementwise_kind::tanh),
                                       {m.add_instruction(ew(mul), {poly, c(0.7978845608f)})});
            auto h = m.add_instruction(ew(add), {t, c(1)});
            m.add_return({m.add_instruction(ew(mul), {half_x, h})});
        };
        auto p = test::transform_and_compare(build, run_simplify, 1e-5);
        EXPECT_EQ(count_named(p.main(), "gelu"), 1u) << p.to_string();
        EXPECT_EQ(count_named(p.main(), "tanh"), 0u) << p.to_string();
        for (const auto& ins : p.main())
            if (const auto* e = ins.get_operator().get_if<op::elementwise>();
                e != nullptr && e->kind == op::elementwise_kind::gelu) {
                EXPECT_NE(e->alpha, 0) << "the tanh form";
            }
    }
}

TEST(simplify, the_exporters_rms_norm_becomes_one_layer_norm_that_is_not_centred) {
    // w * (x * rsqrt(mean(x^2, -1) + eps)) as LLaMA's export writes it (Pow, ReduceMean, Add,
    // Sqrt, Reciprocal, Mul, Mul), and TorchScript's variants (x * x, Div(1, Sqrt), no weight,
    // the weight first); each compared with the chain on the reference target.
    for (int variant = 0; variant < 4; ++variant) {
        auto build = [=](module& m) {
            const dims lens{2, 3, 8}, stat{2, 3, 1};
            auto c = [&](float v, const dims& to) {
                return m.add_instruction(
                    op::broadcast{to},
                    {m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{v}))});
            };
            auto x = m.add_parameter("x", f32(lens));
            auto sq = variant == 1
                          ? m.add_instruction(ew(mul), {x, x})
                          : m.add_instruction(ew(op::elementwise_kind::pow), {x, c(2, lens)});
            auto mean = m.add_instruction(op::reduce{op::reduce_kind::mean, {2}, true}, {sq});
            auto s = m.add_instruction(ew(op::elementwise_kind::sqrt),
                                       {m.add_instruction(ew(add), {mean, c(1e-6f, stat)})});
            auto inv = variant == 1
                           ? m.add_instruction(ew(op::elementwise_kind::div), {c(1, stat), s})
                           : m.add_instruction(ew(op::elementwise_kind::reciprocal), {s});
            auto n = m.add_instruction(ew(mul), {x, m.add_instruction(op::broadcast{lens}, {inv})});
            if (variant == 2) {
                m.add_return({n});
                return;
            }
            auto w = m.add_instruction(op::broadcast{lens},
                                       {m.add_literal(random_literal({8}, 7, 0.5f, 2))});
            m.add_return({variant == 3 ? m.add_instruction(ew(mul), {n, w})
                                       : m.add_instruction(ew(mul), {w, n})});
        };
        auto p = test::transform_and_compare(build, run_simplify, 1e-5);
        const std::string text = p.to_string();
        EXPECT_EQ(count_named(p.main(), "layer_normalization"), 1u) << variant << text;
        EXPECT_EQ(count_named(p.main(), "reduce_mean"), 0u) << variant << text;
        EXPECT_EQ(count_named(p.main(), "mul"), 0u) << variant << text;
        EXPECT_NE(text.find("\"centered\":false"), std::string::npos) << variant << text;
    }
}

TEST(simplify, an_rms_chain_whose_mean_is_used_elsewhere_stays) {
    auto build = [](module& m) {
        const dims lens{2, 8}, stat{2, 1};
        auto x = m.add_parameter("x", f32(lens));
        auto sq = m.add_instruction(ew(mul), {x, x});
        auto mean = m.add_instruction(op::reduce{op::reduce_kind::mean, {1}, true}, {sq});
        auto eps = m.add_instruction(
            op::broadcast{stat},
            {m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{1e-5f}))});
        auto s = m.add_instruction(ew(op::elementwise_kind::sqrt),
                                   {m.add_instruction(ew(add), {mean, eps})});
        auto inv = m.add_instruction(ew(op::elementwise_kind::reciprocal), {s});
        auto n = m.add_instruction(ew(mul), {x, m.add_instruction(op::broadcast{lens}, {inv})});
        m.add_return({n, mean});
    };
    EXPECT_EQ(transform_and_print(build, run_simplify), text_of(build));
}

} // namespace simplify_test
