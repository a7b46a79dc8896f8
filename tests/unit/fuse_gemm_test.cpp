// fuse_gemm (after fuse_pointwise): the fused module of each pattern, extra returns, and
// unchanged results on random inputs.
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/fused.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/dce.hpp"
#include "conflux/passes/fuse_gemm.hpp"
#include "conflux/passes/fuse_pointwise.hpp"
#include "unit/pass_test_helpers.hpp"

#include <cmath>

namespace fuse_gemm_test {

using namespace conflux;
using namespace conflux::test;
using op::elementwise_kind;

namespace {

void run_fusion(module& m) {
    fuse_pointwise{}.apply(m);
    dce{}.apply(m);
    fuse_gemm{}.apply(m);
    dce{}.apply(m);
}

auto ew(elementwise_kind k) {
    return op::make_elementwise(k);
}

const shape image{dtype::f32, {1, 3, 6, 6}};
const shape weights{dtype::f32, {4, 3, 3, 3}};
const dims conv_out{1, 4, 4, 4};

// conv(x, w) + broadcast(b): the common head of the conv patterns.
instruction_ref conv_bias(module& m, instruction_ref x, instruction_ref w, instruction_ref b) {
    auto c = m.add_instruction(op::convolution{}, {x, w});
    auto bb = m.add_instruction(op::broadcast{conv_out}, {b});
    return m.add_instruction(ew(elementwise_kind::add), {c, bb});
}

const module& only_fused_module(const program& p) {
    for (const auto& ins : p.main())
        if (ins.name() == "fused_gemm") return *ins.module_inputs().front();
    throw std::runtime_error("no fused_gemm in main");
}

} // namespace

TEST(fuse_gemm, conv_bias_relu) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", image);
        auto w = m.add_parameter("w", weights);
        auto b = m.add_parameter("b", shape{dtype::f32, {4, 1, 1}});
        m.add_return({m.add_instruction(ew(elementwise_kind::relu), {conv_bias(m, x, w, b)})});
    };
    auto p = transform_and_compare(build, run_fusion);
    EXPECT_EQ(p.main().to_string(), "module main {\n"
                                    "  %x = @param -> f32[1,3,6,6]\n"
                                    "  %w = @param -> f32[4,3,3,3]\n"
                                    "  %b = @param -> f32[4,1,1]\n"
                                    "  @3 = fused_gemm(%x, %w, %b) [fused_gemm0] -> f32[1,4,4,4]\n"
                                    "  @return(@3)\n"
                                    "}\n");
    EXPECT_EQ(p.get_module("fused_gemm0")->to_string(),
              "module fused_gemm0 {\n"
              "  %x0 = @param -> f32[1,3,6,6]\n"
              "  %x1 = @param -> f32[4,3,3,3]\n"
              "  %x2 = @param -> f32[4,1,1]\n"
              "  @3 = convolution{\"dilation\":[],\"group\":1,\"padding\":[],\"stride\":[]}(%x0, "
              "%x1) -> f32[1,4,4,4]\n"
              "  @4 = broadcast{\"out_lens\":[1,4,4,4]}(%x2) -> f32[1,4,4,4]{0,1,0,0}\n"
              "  @5 = add(@3, @4) -> f32[1,4,4,4]\n"
              "  @6 = relu(@5) -> f32[1,4,4,4]\n"
              "  @return(@6)\n"
              "}\n");
}

TEST(fuse_gemm, conv_bias_residual_relu) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", image);
        auto w = m.add_parameter("w", weights);
        auto b = m.add_parameter("b", shape{dtype::f32, {4, 1, 1}});
        auto r = m.add_parameter("r", shape{dtype::f32, conv_out});
        auto a = m.add_instruction(ew(elementwise_kind::add), {conv_bias(m, x, w, b), r});
        m.add_return({m.add_instruction(ew(elementwise_kind::relu), {a})});
    };
    auto p = transform_and_compare(build, run_fusion);
    EXPECT_EQ(op_names(p.main()), "fused_gemm @return");
    const auto& sub = only_fused_module(p);
    EXPECT_EQ(op_names(sub), "convolution broadcast add add relu @return");
    EXPECT_EQ(sub.parameters().size(), 4u);
    // x2 is the bias, x3 the residual: the pointwise op's other inputs in order.
    EXPECT_EQ(sub.get_parameter("x3")->get_shape().lens(), conv_out);
}

TEST(fuse_gemm, conv_add_relu_transpose_reshape) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", image);
        auto w = m.add_parameter("w", weights);
        auto y = m.add_parameter("y", shape{dtype::f32, conv_out});
        auto c = m.add_instruction(op::convolution{}, {x, w});
        auto a = m.add_instruction(ew(elementwise_kind::add), {c, y});
        auto r = m.add_instruction(ew(elementwise_kind::relu), {a});
        auto t = m.add_instruction(op::transpose{{0, 2, 3, 1}}, {r});
        m.add_return({m.add_instruction(op::reshape{{1, 16, 4}}, {t})});
    };
    auto p = transform_and_compare(build, run_fusion);
    EXPECT_EQ(op_names(p.main()), "fused_gemm @return");
    EXPECT_EQ(op_names(only_fused_module(p)), "convolution add relu transpose reshape @return");
}

TEST(fuse_gemm, conv_mul_literal_add_sigmoid_reshape_transpose) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", image);
        auto w = m.add_parameter("w", weights);
        auto y = m.add_parameter("y", shape{dtype::f32, conv_out});
        std::vector<float> scale(64);
        for (std::size_t i = 0; i < scale.size(); ++i)
            scale[i] = 0.5f + 0.01f * static_cast<float>(i);
        auto k = m.add_literal(from_vector(dtype::f32, conv_out, scale));
        auto c = m.add_instruction(op::convolution{}, {x, w});
        auto mu = m.add_instruction(ew(elementwise_kind::mul), {c, k});
        auto a = m.add_instruction(ew(elementwise_kind::add), {mu, y});
        auto s = m.add_instruction(ew(elementwise_kind::sigmoid), {a});
        auto r = m.add_instruction(op::reshape{{1, 4, 16}}, {s});
        m.add_return({m.add_instruction(op::transpose{{0, 2, 1}}, {r})});
    };
    auto p = transform_and_compare(build, run_fusion);
    EXPECT_EQ(op_names(p.main()), "@literal fused_gemm @return");
    const auto& sub = only_fused_module(p);
    EXPECT_EQ(op_names(sub), "convolution mul add sigmoid reshape transpose @return");
    EXPECT_EQ(sub.parameters().size(), 4u); // x, w, the literal, y
}

TEST(fuse_gemm, dot_bias_gelu_head_split) {
    auto build = [](module& m) {
        const dims out{2, 8, 32};
        auto a = m.add_parameter("a", shape{dtype::f32, {2, 8, 16}});
        auto b = m.add_parameter("b", shape{dtype::f32, {2, 16, 32}});
        auto bias = m.add_parameter("bias", shape{dtype::f32, {32}});
        auto scalar = [&](float v) {
            auto lit = m.add_literal(from_vector(dtype::f32, {1}, std::vector<float>{v}));
            return m.add_instruction(op::broadcast{out}, {lit});
        };
        auto d = m.add_instruction(op::dot{}, {a, b});
        auto h = m.add_instruction(ew(elementwise_kind::add),
                                   {d, m.add_instruction(op::broadcast{out}, {bias})});
        // gelu(h) = 0.5 * h * (1 + erf(h / sqrt(2)))
        auto u = m.add_instruction(ew(elementwise_kind::mul), {h, scalar(1 / std::sqrt(2.0f))});
        auto e = m.add_instruction(ew(elementwise_kind::erf), {u});
        auto v = m.add_instruction(ew(elementwise_kind::add), {e, scalar(1)});
        auto hv = m.add_instruction(ew(elementwise_kind::mul), {h, v});
        auto g = m.add_instruction(ew(elementwise_kind::mul), {hv, scalar(0.5f)});
        auto r = m.add_instruction(op::reshape{{2, 8, 4, 8}}, {g});
        m.add_return({m.add_instruction(op::transpose{{0, 2, 1, 3}}, {r})});
    };
    auto p = transform_and_compare(build, run_fusion);
    EXPECT_EQ(op_names(p.main()), "@literal @literal @literal fused_gemm @return");
    const auto& sub = only_fused_module(p);
    EXPECT_EQ(op_names(sub), "dot broadcast add broadcast mul erf broadcast add mul broadcast mul "
                             "reshape transpose @return");
    EXPECT_EQ(sub.parameters().size(), 6u);
}

TEST(fuse_gemm, value_used_outside_becomes_an_extra_return) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", image);
        auto w = m.add_parameter("w", weights);
        auto c = m.add_instruction(op::convolution{}, {x, w});
        auto r = m.add_instruction(ew(elementwise_kind::relu), {c});
        auto t = m.add_instruction(op::transpose{{0, 2, 3, 1}}, {r});
        m.add_return({t, c});
    };
    auto p = transform_and_compare(build, run_fusion);
    EXPECT_EQ(p.main().to_string(),
              "module main {\n"
              "  %x = @param -> f32[1,3,6,6]\n"
              "  %w = @param -> f32[4,3,3,3]\n"
              "  @2 = fused_gemm(%x, %w) [fused_gemm0] -> (f32[1,4,4,4]{64,4,1,16}, "
              "f32[1,4,4,4])\n"
              "  @3 = get_tuple_elem{\"index\":0}(@2) -> f32[1,4,4,4]{64,4,1,16}\n"
              "  @4 = get_tuple_elem{\"index\":1}(@2) -> f32[1,4,4,4]\n"
              "  @return(@3, @4)\n"
              "}\n");
    EXPECT_EQ(op_names(*p.get_module("fused_gemm0")), "convolution relu transpose @return");
}

TEST(fuse_gemm, epilogue_input_computed_from_the_anchor_is_not_fused) {
    // add(conv, exp(conv)): exp is a separate group reading conv, so fusing the add would need
    // exp's result inside the fused op that produces its input. The anchor fuses alone.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", image);
        auto w = m.add_parameter("w", weights);
        auto c = m.add_instruction(op::convolution{}, {x, w});
        auto e = m.add_instruction(ew(elementwise_kind::exp), {c});
        auto t = m.add_instruction(op::transpose{{0, 1, 3, 2}}, {e});
        m.add_return({m.add_instruction(ew(elementwise_kind::add), {c, t})});
    };
    transform_and_compare(build, run_fusion);
}

TEST(fuse_gemm, concat_of_the_anchor_is_not_an_epilogue) {
    // relu(concat(conv, y)): fuse_pointwise puts the concat in the relu's group, but the gemm
    // kernel holds only its own output tile, so the convolution fuses alone.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", image);
        auto w = m.add_parameter("w", weights);
        auto y = m.add_parameter("y", shape{dtype::f32, conv_out});
        auto c = m.add_instruction(op::convolution{}, {x, w});
        auto cat = m.add_instruction(op::concat{1}, {c, y});
        m.add_return({m.add_instruction(ew(elementwise_kind::relu), {cat})});
    };
    auto p = transform_and_compare(build, run_fusion);
    EXPECT_EQ(op_names(p.main()), "fused_gemm pointwise @return");
    EXPECT_EQ(op_names(only_fused_module(p)), "convolution @return");
}

TEST(fuse_gemm, two_convs_share_an_input) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", image);
        auto w1 = m.add_parameter("w1", weights);
        auto w2 = m.add_parameter("w2", weights);
        auto c1 = m.add_instruction(op::convolution{}, {x, w1});
        auto c2 = m.add_instruction(op::convolution{}, {x, w2});
        auto r1 = m.add_instruction(ew(elementwise_kind::relu), {c1});
        auto r2 = m.add_instruction(ew(elementwise_kind::sigmoid), {c2});
        m.add_return({r1, r2});
    };
    auto p = transform_and_compare(build, run_fusion);
    EXPECT_EQ(op_names(p.main()), "fused_gemm fused_gemm @return");
    EXPECT_EQ(op_names(*p.get_module("fused_gemm0")), "convolution relu @return");
    EXPECT_EQ(op_names(*p.get_module("fused_gemm1")), "convolution sigmoid @return");
}

TEST(fuse_gemm, anchor_without_epilogue_takes_its_layout_tail) {
    auto build = [](module& m) {
        auto a = m.add_parameter("a", shape{dtype::f32, {4, 6}});
        auto b = m.add_parameter("b", shape{dtype::f32, {6, 5}});
        auto d = m.add_instruction(op::dot{}, {a, b});
        m.add_return({m.add_instruction(op::transpose{{1, 0}}, {d})});
    };
    auto p = transform_and_compare(build, run_fusion);
    EXPECT_EQ(op_names(p.main()), "fused_gemm @return");
    EXPECT_EQ(op_names(only_fused_module(p)), "dot transpose @return");
}

TEST(fuse_gemm, same_pattern_gives_the_same_submodule_body) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {1, 4, 8, 8}});
        auto w1 = m.add_parameter("w1", shape{dtype::f32, {4, 4, 3, 3}});
        auto w2 = m.add_parameter("w2", shape{dtype::f32, {4, 4, 3, 3}});
        auto b1 = m.add_parameter("b1", shape{dtype::f32, {4, 1, 1}});
        auto b2 = m.add_parameter("b2", shape{dtype::f32, {4, 1, 1}});
        auto layer = [&](instruction_ref in, instruction_ref w, instruction_ref b,
                         const dims& out) {
            auto c = m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1}, {in, w});
            auto bb = m.add_instruction(op::broadcast{out}, {b});
            auto a = m.add_instruction(ew(elementwise_kind::add), {c, bb});
            return m.add_instruction(ew(elementwise_kind::relu), {a});
        };
        auto y = layer(x, w1, b1, {1, 4, 8, 8});
        m.add_return({layer(y, w2, b2, {1, 4, 8, 8})});
    };
    auto p = transform_and_compare(build, run_fusion);
    EXPECT_EQ(op_names(p.main()), "fused_gemm fused_gemm @return");
    EXPECT_EQ(body_text(*p.get_module("fused_gemm0")), body_text(*p.get_module("fused_gemm1")));
}

} // namespace fuse_gemm_test
