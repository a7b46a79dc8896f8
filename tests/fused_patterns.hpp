// The fused gemm pattern families of issue 5 (conv/dot + epilogue + layout tail), as program
// builders shared by the CPU decision-matrix test and the GPU run of the same matrix. Each
// builds an unoptimised NCHW/ONNX-style program; the pass pipeline turns it into one fused gemm
// op.
#pragma once

#include "conflux/ir/program.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"

#include <functional>
#include <string>
#include <vector>

namespace conflux::test {

struct fused_pattern {
    std::string name;
    std::function<void(module&, dtype)> build;
};

inline std::vector<fused_pattern> fused_patterns() {
    using op::elementwise_kind;
    auto ew = [](elementwise_kind k) { return op::make_elementwise(k); };
    auto conv = [](module& m, dtype t, std::size_t c, std::size_t k, std::size_t hw) {
        auto x = m.add_parameter("x", shape{t, {2, c, hw, hw}});
        auto w = m.add_parameter("w", shape{t, {k, c, 3, 3}});
        return m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1, false}, {x, w});
    };
    auto bias = [](module& m, dtype t, instruction_ref v, std::size_t k) {
        auto b = m.add_parameter("b", shape{t, {1, k, 1, 1}});
        auto bb = m.add_instruction(op::broadcast{v->get_shape().lens()}, {b});
        return m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {v, bb});
    };
    return {
        {"conv+bias+relu",
         [=](module& m, dtype t) {
             auto c = conv(m, t, 16, 32, 12);
             m.add_return({m.add_instruction(ew(elementwise_kind::relu), {bias(m, t, c, 32)})});
         }},
        {"conv+bias+residual+relu",
         [=](module& m, dtype t) {
             auto c = conv(m, t, 16, 32, 12);
             auto r = m.add_parameter("r", shape{t, {2, 32, 12, 12}});
             auto s = m.add_instruction(ew(elementwise_kind::add), {bias(m, t, c, 32), r});
             m.add_return({m.add_instruction(ew(elementwise_kind::relu), {s})});
         }},
        {"conv+add+relu+transpose+reshape",
         [=](module& m, dtype t) {
             auto c = conv(m, t, 8, 16, 10);
             auto relu = m.add_instruction(ew(elementwise_kind::relu), {bias(m, t, c, 16)});
             auto tr = m.add_instruction(op::transpose{{0, 2, 3, 1}}, {relu});
             m.add_return({m.add_instruction(op::reshape{{2, 100, 16}}, {tr})});
         }},
        {"conv+mul+add+sigmoid+reshape+transpose",
         [=](module& m, dtype t) {
             auto c = conv(m, t, 8, 16, 10);
             auto s = m.add_parameter("s", shape{t, {1, 16, 1, 1}});
             auto sb = m.add_instruction(op::broadcast{{2, 16, 10, 10}}, {s});
             auto mul = m.add_instruction(ew(elementwise_kind::mul), {c, sb});
             auto sig = m.add_instruction(ew(elementwise_kind::sigmoid), {bias(m, t, mul, 16)});
             auto rs = m.add_instruction(op::reshape{{2, 16, 100}}, {sig});
             m.add_return({m.add_instruction(op::transpose{{0, 2, 1}}, {rs})});
         }},
        {"dot+bias+gelu+reshape+transpose",
         [=](module& m, dtype t) {
             auto a = m.add_parameter("a", shape{t, {2, 24, 64}});
             auto w = m.add_parameter("w", shape{t, {64, 96}});
             auto wb = m.add_instruction(op::broadcast{{2, 64, 96}}, {w});
             auto d = m.add_instruction(op::dot{}, {a, wb});
             auto b = m.add_parameter("b", shape{t, {96}});
             auto bb = m.add_instruction(op::broadcast{{2, 24, 96}}, {b});
             auto x = m.add_instruction(ew(elementwise_kind::add), {d, bb});
             auto y = m.add_instruction(ew(elementwise_kind::gelu), {x});
             auto rs = m.add_instruction(op::reshape{{2, 24, 4, 24}}, {y});
             m.add_return({m.add_instruction(op::transpose{{0, 2, 1, 3}}, {rs})});
         }},
        {"conv+bias with an extra return",
         [=](module& m, dtype t) {
             auto c = conv(m, t, 8, 16, 10);
             auto biased = bias(m, t, c, 16);
             auto relu = m.add_instruction(ew(elementwise_kind::relu), {biased});
             m.add_return({relu, biased});
         }},
        {"conv+tanh+squeeze/unsqueeze tail",
         [=](module& m, dtype t) {
             auto x = m.add_parameter("x", shape{t, {2, 8, 1, 20}});
             auto w = m.add_parameter("w", shape{t, {16, 8, 1, 3}});
             auto c =
                 m.add_instruction(op::convolution{{0, 1, 0, 1}, {1, 1}, {1, 1}, 1, false}, {x, w});
             auto th = m.add_instruction(ew(elementwise_kind::tanh), {c});
             auto sq = m.add_instruction(op::squeeze{{2}}, {th});
             m.add_return({m.add_instruction(op::unsqueeze{{0}}, {sq})});
         }},
        // Depthwise convolutions (issue 16's kernel family besides implicit GEMM): MobileNet's
        // 3x3 with bias and ReLU6, and ConvNeXt's 7x7 with bias whose output is permuted to
        // channels last for the layer norm after it.
        {"depthwise conv+bias+clip",
         [=](module& m, dtype t) {
             auto x = m.add_parameter("x", shape{t, {2, 32, 12, 12}});
             auto w = m.add_parameter("w", shape{t, {32, 1, 3, 3}});
             auto c = m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 1}, {1, 1}, 32, false},
                                        {x, w});
             auto lo = m.add_literal(from_vector(t, {}, std::vector<float>{0.0f}));
             auto hi = m.add_literal(from_vector(t, {}, std::vector<float>{6.0f}));
             auto b = bias(m, t, c, 32);
             auto lob = m.add_instruction(op::broadcast{b->get_shape().lens()}, {lo});
             auto hib = m.add_instruction(op::broadcast{b->get_shape().lens()}, {hi});
             m.add_return({m.add_instruction(ew(elementwise_kind::clip), {b, lob, hib})});
         }},
        {"depthwise 7x7 conv+bias+transpose",
         [=](module& m, dtype t) {
             auto x = m.add_parameter("x", shape{t, {2, 16, 10, 10}});
             auto w = m.add_parameter("w", shape{t, {16, 1, 7, 7}});
             auto c = m.add_instruction(op::convolution{{3, 3, 3, 3}, {1, 1}, {1, 1}, 16, false},
                                        {x, w});
             m.add_return({m.add_instruction(op::transpose{{0, 2, 3, 1}}, {bias(m, t, c, 16)})});
         }},
        // nn.MultiheadAttention's out_proj on a sequence-first [s, b, e] input: the residual
        // is added after the projection is reshaped and transposed back to batch-first.
        {"dot+bias+reshape+transpose+residual",
         [=](module& m, dtype t) {
             auto a = m.add_parameter("a", shape{t, {48, 64}});
             auto w = m.add_parameter("w", shape{t, {64, 32}});
             auto d = m.add_instruction(op::dot{}, {a, w});
             auto b = m.add_parameter("b", shape{t, {32}});
             auto bb = m.add_instruction(op::broadcast{{48, 32}}, {b});
             auto x = m.add_instruction(ew(elementwise_kind::add), {d, bb});
             auto rs = m.add_instruction(op::reshape{{24, 2, 32}}, {x});
             auto tr = m.add_instruction(op::transpose{{1, 0, 2}}, {rs});
             auto r = m.add_parameter("r", shape{t, {2, 24, 32}});
             m.add_return({m.add_instruction(ew(elementwise_kind::add), {tr, r})});
         }},
    };
}

} // namespace conflux::test
